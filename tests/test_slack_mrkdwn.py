"""Markdown to Slack's mrkdwn, and Slack's message text back to plain text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wakeful.channels.slack.mrkdwn import to_mrkdwn, to_plain


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("**bold** and __bold__", "*bold* and *bold*"),
        ("*italic* and _italic_", "_italic_ and _italic_"),
        ("~~gone~~", "~gone~"),
        (
            "[the docs](https://example.com/a?b=1&c=2)",
            "<https://example.com/a?b=1&amp;c=2|the docs>",
        ),
        ("see <https://example.com>", "see <https://example.com>"),
        ("![a chart](https://example.com/c.png)", "<https://example.com/c.png|a chart>"),
        ("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"),
        ("# Plan\n## **Step** one", "*Plan*\n*Step one*"),
        ("- one\n* two\n  + three", "• one\n• two\n  • three"),
        ("5 * 3 * 2 and snake_case and 2*x", "5 * 3 * 2 and snake_case and 2*x"),
        ("---", "───"),
        ("> quoted\n>also\nnot > this", "> quoted\n> also\nnot &gt; this"),
    ],
)
def test_markdown_becomes_mrkdwn(markdown: str, mrkdwn: str) -> None:
    assert to_mrkdwn(markdown) == mrkdwn


def test_code_is_kept_as_written_but_escaped() -> None:
    """Nothing in code is rewritten; the fence's language tag goes (Slack would show it)."""
    markdown = "run `a**b**` then\n```python\nif a < b and **x**:\n    [y](z)\n```\ndone **now**"
    assert to_mrkdwn(markdown) == (
        "run `a**b**` then\n```\nif a &lt; b and **x**:\n    [y](z)\n```\ndone *now*"
    )


def test_an_unclosed_fence_stays_code() -> None:
    """A chunk cut inside a fence (or a model that forgot to close one) keeps it as code."""
    assert to_mrkdwn("```\n**x** < y") == "```\n**x** &lt; y```"


def test_link_targets_cannot_break_out_of_the_link() -> None:
    assert to_mrkdwn("[x](https://e.com/a|b>c)") == "<https://e.com/a%7Cb%3Ec|x>"


@pytest.mark.parametrize(
    ("slack", "plain"),
    [
        ("a &lt; b &amp;&amp; c &gt; d", "a < b && c > d"),
        ("hi <@U123>, see <#C456|general>", "hi @U123, see #general"),
        ("<!here> look", "@here look"),
        ("<https://e.com/a?b=1&amp;c=2|the docs>", "the docs (https://e.com/a?b=1&c=2)"),
        ("<https://e.com> and <mailto:a@b.c|a@b.c>", "https://e.com and a@b.c"),
    ],
)
def test_slack_text_becomes_plain(slack: str, plain: str) -> None:
    assert to_plain(slack) == plain


@given(st.text(alphabet="ab *_~#-&<>\n", max_size=60))
def test_slacks_control_characters_never_go_out_raw(markdown: str) -> None:
    """Whatever the model writes, Slack receives `&`, `<`, `>` only as entities (or a quote)."""
    out = to_mrkdwn(markdown)
    without_quotes = re.sub(r"^> ", "", out, flags=re.MULTILINE)
    assert "<" not in without_quotes and ">" not in without_quotes
    assert re.fullmatch(r"(?:[^&]|&(?:amp|lt|gt);)*", out, flags=re.DOTALL)
    assert to_plain(out).count("&") == markdown.count("&")
