"""The model's Markdown as Telegram HTML: what renders, and what Telegram would accept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.telegram_entities import CannotParse, visible_text
from wakeful.channels.telegram.markdown import to_telegram_html

CASES = [
    ("**bold** and __also__", "<b>bold</b> and <b>also</b>"),
    ("*one* and _two_", "<i>one</i> and <i>two</i>"),
    ("~~gone~~", "<s>gone</s>"),
    ("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"),
    ("snake_case_name, 2*3*4 and a * b * c", "snake_case_name, 2*3*4 and a * b * c"),
    ("run `rm -rf <dir>` now", "run <code>rm -rf &lt;dir&gt;</code> now"),
    ("``a `tick` b``", "<code>a `tick` b</code>"),
    ("```\nplain <pre>\n```", "<pre>plain &lt;pre&gt;</pre>"),
    (
        "```python\nif a < b and **x**:\n    pass\n```\nafter",
        '<pre><code class="language-python">if a &lt; b and **x**:\n    pass</code></pre>\nafter',
    ),
    ("```\nnever closed <", "<pre>never closed &lt;</pre>"),
    (
        "[the *docs*](https://e.com/a_b?x=1&y=2)",
        '<a href="https://e.com/a_b?x=1&amp;y=2">the <i>docs</i></a>',
    ),
    ('[q](https://e.com/"x")', '<a href="https://e.com/&quot;x&quot;">q</a>'),
    ("[relative](/path) stays text", "relative (/path) stays text"),
    ("# Title\n- one\n* two\n+ three", "<b>Title</b>\n• one\n• two\n• three"),
    ("**a *b** c*", "<b>a *b</b> c*"),  # crossing spans: only the one that nests
]


@pytest.mark.parametrize(("markdown", "expected"), CASES)
def test_markdown_becomes_telegram_html(markdown: str, expected: str) -> None:
    """Each construct the model uses renders as Telegram's tag for it; the rest is escaped text."""
    converted = to_telegram_html(markdown)
    assert converted == expected
    visible_text(converted)  # and Telegram's parser would take it


def test_the_fake_refuses_what_telegram_refuses() -> None:
    """The fake's entity parser is as strict as Telegram's, so the test above means something."""
    for bad in ("a < b", "<b>open", "<b><i>x</b></i>", "<script>x</script>", "AT&T"):
        with pytest.raises(CannotParse):
            visible_text(bad)
    assert visible_text('<a href="https://e.com">x &amp; y</a>') == "x & y"


MARKDOWNISH = st.text(alphabet=st.sampled_from(list("ab _*`~[]()<>&#-\n:/h.\"'")), max_size=80)


@settings(max_examples=400, deadline=None)
@given(MARKDOWNISH)
def test_any_text_converts_to_html_telegram_accepts(markdown: str) -> None:
    """Whatever the model writes, the HTML parses and shows at most as many characters."""
    shown = visible_text(to_telegram_html(markdown))
    assert len(shown) <= len(markdown)
