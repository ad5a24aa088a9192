"""The model's Markdown as Telegram HTML (``parse_mode = "HTML"``).

Telegram's HTML is a small, strict dialect: a handful of tags, and every
``<``, ``>`` and ``&`` that is not markup escaped; a message that breaks the
rules is refused whole ("can't parse entities"), so the client falls back to
plain text when that happens. Code is cut out first (nothing inside it is
markup), then the rest is escaped and the emphasis patterns are applied to
the escaped text, each only where its tags come out balanced.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

# Cut-out pieces are put back last; NUL never survives from the input.
_HOLE = "\x00{}\x00"
_HOLE_BACK = re.compile(r"\x00(\d+)\x00")

_FENCE = re.compile(r"^```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^```[ \t]*$|\Z)", re.M | re.S)
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^()\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(?=\S)", re.M)
_LINK_SCHEMES = ("http://", "https://", "tg://", "mailto:")

# Applied in this order to escaped text; a span never crosses a line.
_EMPHASIS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\*\*(?=\S)([^\n]+?)(?<=\S)\*\*"), "b"),
    (re.compile(r"(?<![\w_])__(?=\S)([^\n]+?)(?<=\S)__(?![\w_])"), "b"),
    (re.compile(r"~~(?=\S)([^\n]+?)(?<=\S)~~"), "s"),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])([^\n]+?)(?<=[^\s*])\*(?![\w*])"), "i"),
    (re.compile(r"(?<![\w_])_(?=[^\s_])([^\n]+?)(?<=[^\s_])_(?![\w_])"), "i"),
]
_TAG = re.compile(r"<(/?)([a-z]+)[^>]*>")


def to_telegram_html(markdown: str) -> str:
    """Telegram HTML for ``markdown``; unknown syntax stays as its (escaped) text."""
    holes: list[str] = []

    def keep(piece: str) -> str:
        holes.append(piece)
        return _HOLE.format(len(holes) - 1)

    text = markdown.replace("\x00", "")
    text = _FENCE.sub(lambda m: keep(_pre(m.group(1), m.group(2))), text)
    text = _INLINE_CODE.sub(lambda m: keep(_code(m.group(2))), text)
    text = html.escape(text, quote=False)
    text = _LINK.sub(lambda m: keep(_link(m.group(1), m.group(2))), text)
    text = _HEADING.sub(lambda m: f"<b>{m.group(1)}</b>", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _emphasise(text)
    while _HOLE_BACK.search(text):  # links hold code, so holes may nest
        text = _HOLE_BACK.sub(lambda m: holes[int(m.group(1))], text)
    return text


def _emphasise(text: str) -> str:
    for pattern, tag in _EMPHASIS:
        text = pattern.sub(_wrap_if_balanced(tag), text)
    return text


def _wrap_if_balanced(tag: str) -> Callable[[re.Match[str]], str]:
    def wrap(match: re.Match[str]) -> str:
        inner = match.group(1)
        return f"<{tag}>{inner}</{tag}>" if _balanced(inner) else match.group(0)

    return wrap


def _balanced(fragment: str) -> bool:
    """Whether the tags in ``fragment`` open and close in order (so wrapping it nests)."""
    open_tags: list[str] = []
    for match in _TAG.finditer(fragment):
        closing, name = match.group(1), match.group(2)
        if not closing:
            open_tags.append(name)
        elif not open_tags or open_tags.pop() != name:
            return False
    return not open_tags


def _pre(language: str, body: str) -> str:
    code = html.escape(body.removesuffix("\n"), quote=False)
    if language:
        return f'<pre><code class="language-{html.escape(language)}">{code}</code></pre>'
    return f"<pre>{code}</pre>"


def _code(body: str) -> str:
    # CommonMark: one leading and trailing space are stripped when both are there.
    if len(body) > 2 and body.startswith(" ") and body.endswith(" "):
        body = body[1:-1]
    return f"<code>{html.escape(body, quote=False)}</code>"


def _link(label: str, url: str) -> str:
    """``label`` and ``url`` arrive HTML-escaped; quotes are escaped too for the attribute."""
    if not url.lower().startswith(_LINK_SCHEMES):
        return f"{_emphasise(label)} ({url})"  # Telegram refuses relative and odd URLs
    return f'<a href="{url.replace(chr(34), "&quot;")}">{_emphasise(label)}</a>'
