"""The web page renders the model's Markdown as elements, in a real headless Chromium.

A reply may quote a stranger (a webhook, an e-mail), so the page builds every node
itself: raw HTML in a reply stays text, and a link is kept only to http, https and
mailto. The replies come from the fake model through a real daemon process, streamed
and from the records; the renderer's finer cases are run on the page it serves.
Screenshots go to ``.pt-web/`` (not part of the repository).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import as_phone, chromium, find, wait_for
from tests.daemon_process import DaemonProcess
from tests.fakes.model_replies import Reply
from tests.fakes.model_server import FakeModelServer

# The daemon and its fake model are set up as for the page's other tests (fixtures).
from tests.test_web_page import (  # noqa: F401 (fixtures)
    daemon,
    daemon_and_proxy,
    model,
    nothing_scripted_is_left_over,
    open_page,
)

SHOTS = Path(__file__).parents[1] / ".pt-web"
LONG_LINE = "print('a line of code longer than any phone is wide, " + "and longer " * 8 + "')"
RICH = f"""## Plan for today

Here is **bold**, *emphasis*, `inline code` and a [link](https://example.com/docs).

1. First step
2. Second step
   - a detail
   - another

> A quoted line

```python
def greet(name):
    return f"<b>{{name}}</b>"
{LONG_LINE}
```

Write to <me@example.com>."""
# What a webhook could make the model quote: markup and script links, next to one good link.
HOSTILE = """A stranger wrote: <img src=x onerror="document.title='owned'"> and \
<script>document.title='owned'</script>

Click [x](javascript:alert(1)) or [y](JavaScript:document.title='owned') or \
<javascript:alert(1)> or ![pic](javascript:alert(1)) or [d](data:text/html,hi), \
and [the real one](https://example.com/ok)."""

# The body's outline: what each construct became.
SHAPE = """
const body = arguments[0].querySelector('.body');
const text = (css) => body.querySelector(css)?.textContent;
const link = body.querySelector('p > a[href^="https:"]');
return {
  blocks: [...body.children].map((e) => e.tagName.toLowerCase()),
  heading: text(':scope > h4'),
  strong: text('p strong'), em: text('p em'), code: text('p > code'),
  link: link && [link.getAttribute('href'), link.target, link.rel, link.textContent],
  ol: [...body.querySelectorAll('ol > li')].map((li) => li.firstChild.textContent),
  nested: [...body.querySelectorAll('ol > li > ul > li')].map((li) => li.textContent),
  quote: text('blockquote > p'),
  pre: text('pre > code.language-python'),
  mail: body.querySelector('a[href^="mailto:"]')?.getAttribute('href'),
};
"""
# Whether the code block scrolls inside its bubble and nothing widens the page.
FITS = """
const bubble = arguments[0], pre = bubble.querySelector('pre');
const list = document.getElementById('messages').getBoundingClientRect();
return {scrolls: pre.scrollWidth > pre.clientWidth,
        bubble: bubble.getBoundingClientRect().right, list: list.right,
        page: document.documentElement.scrollWidth, width: document.documentElement.clientWidth};
"""


@dataclass
class Page:
    daemon: DaemonProcess
    model: FakeModelServer
    browser: WebDriver


@pytest.fixture(scope="module")
def page(
    daemon: DaemonProcess,  # noqa: F811 (the fixture)
    model: FakeModelServer,  # noqa: F811 (the fixture)
) -> Iterator[Page]:
    SHOTS.mkdir(exist_ok=True)
    with chromium(SHOTS, width=1280, height=800) as browser:
        yield Page(daemon, model, browser)


def ask(browser: WebDriver, text: str) -> None:
    find(browser, "#message").send_keys(text, Keys.ENTER)


def final_reply(browser: WebDriver) -> Any:
    css = ".msg.assistant:not(.streaming)"
    return wait_for(lambda: browser.find_elements("css selector", css), what="the reply")[-1]


def test_a_reply_shows_each_construct_as_its_element_streamed_and_from_the_records(
    page: Page,
) -> None:
    browser = page.browser
    page.model.push(Reply(text=RICH, token_delay_s=0.01))
    open_page(browser, page.daemon.url, "web-md")
    ask(browser, "what is the plan?")
    expected = {
        "blocks": ["h4", "p", "ol", "blockquote", "pre", "p"],
        "heading": "Plan for today",  # "##" under the page's own h1 and h2
        "strong": "bold",
        "em": "emphasis",
        "code": "inline code",
        "link": ["https://example.com/docs", "_blank", "noopener noreferrer", "link"],
        "ol": ["First step", "Second step"],
        "nested": ["a detail", "another"],
        "quote": "A quoted line",
        "pre": f'def greet(name):\n    return f"<b>{{name}}</b>"\n{LONG_LINE}',
        "mail": "mailto:me@example.com",
    }
    assert browser.execute_script(SHAPE, final_reply(browser)) == expected
    fits = browser.execute_script(FITS, final_reply(browser))
    browser.save_screenshot(str(SHOTS / "markdown-desktop.png"))
    assert fits["scrolls"] and fits["bubble"] <= fits["list"], fits
    assert fits["page"] <= fits["width"], fits
    # Read again from the outbox (not streamed): the same elements.
    browser.refresh()
    wait_for(lambda: find(browser, "#connection").text == "live", what="the page again")
    assert browser.execute_script(SHAPE, final_reply(browser)) == expected
    as_phone(browser)
    try:
        reply = final_reply(browser)
        browser.execute_script("arguments[0].scrollIntoView()", reply)
        browser.save_screenshot(str(SHOTS / "markdown-phone.png"))
        fits = browser.execute_script(FITS, reply)
        assert fits["scrolls"] and fits["bubble"] <= fits["list"], fits
        assert fits["page"] <= fits["width"], fits  # the code scrolls, not the page
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})  # type: ignore[attr-defined]


def test_a_strangers_markup_and_script_links_stay_text(page: Page) -> None:
    browser = page.browser
    page.model.push(Reply(text=HOSTILE))
    open_page(browser, page.daemon.url, "web-md-hostile")
    ask(browser, "what did the webhook say?")
    reply = final_reply(browser)
    made = browser.execute_script(
        "const body = arguments[0].querySelector('.body');"
        "return {tags: [...body.querySelectorAll('*')].map((e) => e.tagName.toLowerCase()),"
        " links: [...body.querySelectorAll('a')].map((a) => a.getAttribute('href')),"
        " text: body.textContent, title: document.title}",
        reply,
    )
    browser.save_screenshot(str(SHOTS / "markdown-hostile.png"))
    assert sorted(set(made["tags"])) == ["a", "p"], made
    assert made["links"] == ["https://example.com/ok"], made
    for written in (
        "<img src=x onerror=\"document.title='owned'\">",
        "<script>document.title='owned'</script>",
        "[x](javascript:alert(1))",
        "[y](JavaScript:document.title='owned')",
        "<javascript:alert(1)>",
        "![pic](javascript:alert(1))",
        "[d](data:text/html,hi)",
    ):
        assert written in made["text"], written
    assert made["title"] == "wakeful"
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 (reading it is the check)


def test_a_code_block_being_streamed_is_code_before_its_fence_closes(page: Page) -> None:
    browser = page.browser
    lines = "\n".join(f"step_{n}()" for n in range(40))
    text = f"Run this:\n\n```python\n{lines}\n```\n\nDone."
    page.model.push(Reply(text=text, token_delay_s=0.05))
    open_page(browser, page.daemon.url, "web-md-stream")
    ask(browser, "give me the script")
    # One read of the page while the reply streams: the fence's marks are not shown as
    # text, the code so far is in a code block.
    partial = wait_for(
        lambda: browser.execute_script(
            "const body = document.querySelector('.msg.streaming .body');"
            "const pre = body && body.querySelector('pre > code.language-python');"
            "return pre?.textContent && {text: body.textContent, code: pre.textContent}"
        ),
        what="a code block while streaming",
    )
    assert "```" not in partial["text"] and partial["code"].startswith("step_0()"), partial
    assert not partial["code"].endswith("step_39()"), "read after the whole code had come"
    reply = final_reply(browser)
    shape = browser.execute_script(
        "const body = arguments[0].querySelector('.body');"
        "return [[...body.children].map((e) => e.tagName.toLowerCase()),"
        " body.querySelector('pre').textContent]",
        reply,
    )
    assert shape == [["p", "pre", "p"], lines]


# Markdown → the HTML of the elements the page builds for it (read back with innerHTML).
CASES = [
    ("para one\nline two\n\npara two", "<p>para one<br>line two</p><p>para two</p>"),
    ("***both*** ~~gone~~", "<p><em><strong>both</strong></em> <del>gone</del></p>"),
    ("_em_ and __strong__", "<p><em>em</em> and <strong>strong</strong></p>"),
    ("a * b and snake_case_word", "<p>a * b and snake_case_word</p>"),
    ("*x `*` y*", "<p><em>x <code>*</code> y</em></p>"),
    (r"\*not em\* \`not code\`", "<p>*not em* `not code`</p>"),
    ("**unclosed and `open", "<p>**unclosed and `open</p>"),
    ("# One\n###### Six\n#tag", "<h3>One</h3><h6>Six</h6><p>#tag</p>"),
    ("Intro:\n- x\n- y", "<p>Intro:</p><ul><li>x</li><li>y</li></ul>"),
    ("3. three\n4. four", '<ol start="3"><li>three</li><li>four</li></ol>'),
    ("1. a\n  - sub\n2. b", "<ol><li>a<ul><li>sub</li></ul></li><li>b</li></ol>"),
    ("- a\n\n- b", "<ul><li><p>a</p></li><li><p>b</p></li></ul>"),
    ("```\nopen fence\n<b>x</b>", "<pre><code>open fence\n&lt;b&gt;x&lt;/b&gt;</code></pre>"),
    ("> > deep\n> back", "<blockquote><blockquote><p>deep<br>back</p></blockquote></blockquote>"),
    ("---", "<hr>"),
    (
        "| a | b |\n|:--|--:|\n| 1 | **2** |",
        '<div class="table"><table><thead><tr><th>a</th><th style="text-align: right;">b</th>'
        '</tr></thead><tbody><tr><td>1</td><td style="text-align: right;"><strong>2</strong>'
        "</td></tr></tbody></table></div>",
    ),
    (
        "see https://e.com/x). or <https://x.org>",
        '<p>see <a href="https://e.com/x" target="_blank" rel="noopener noreferrer">'
        'https://e.com/x</a>). or <a href="https://x.org/" target="_blank" '
        'rel="noopener noreferrer">https://x.org</a></p>',
    ),
    (
        "![a cat](https://img.example/cat.png)",  # a link to the image, never loaded
        '<p><a href="https://img.example/cat.png" target="_blank" rel="noopener noreferrer">'
        "a cat</a></p>",
    ),
    ("[r](/relative) [p](//evil.example)", "<p>[r](/relative) [p](//evil.example)</p>"),
    ("<b onclick=x>hi</b> &amp;", "<p>&lt;b onclick=x&gt;hi&lt;/b&gt; &amp;amp;</p>"),
    # Nested deeper than the renderer goes: the rest is text (no stack overflow).
    (">" * 5000, "<blockquote>" * 12 + "<p>" + "&gt;" * 4988 + "</p>" + "</blockquote>" * 12),
]


@pytest.fixture(scope="module")
def renderer(page: Page) -> WebDriver:
    """The page as the daemon serves it, its renderer called directly."""
    open_page(page.browser, page.daemon.url, "web-md-renderer")
    return page.browser


@pytest.mark.parametrize(("markdown", "html"), CASES)
def test_the_renderer_builds_these_elements(renderer: WebDriver, markdown: str, html: str) -> None:
    made = renderer.execute_script(
        "const box = document.createElement('div');"
        "renderMarkdown(arguments[0], box);"
        "return box.innerHTML",
        markdown,
    )
    assert made == html


def test_drawing_again_keeps_the_blocks_that_did_not_change(renderer: WebDriver) -> None:
    """A streamed reply is drawn again on each chunk: its earlier blocks stay the same
    nodes (a selection in them, a code block's scroll survive), only the last is new."""
    kept = renderer.execute_script(
        "const box = document.createElement('div');"
        "renderMarkdown('```\\ncode\\n```\\n\\nfirst', box);"
        "const [code, text] = box.children;"
        "renderMarkdown('```\\ncode\\n```\\n\\nfirst and more\\n\\n- new', box);"
        "return [box.children[0] === code, box.children[1] === text, box.innerHTML]"
    )
    assert kept == [
        True,
        False,
        "<pre><code>code</code></pre><p>first and more</p><ul><li>new</li></ul>",
    ]
