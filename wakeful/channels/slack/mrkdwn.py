"""Markdown, as models write it, to Slack's ``mrkdwn``.

Slack renders its own dialect: ``*bold*``, ``_italic_``, ``~strike~``,
``<url|text>`` links, code spans and fences as in Markdown, no headings and
no tables. ``&``, ``<`` and ``>`` are control characters everywhere, code
included, and must be sent as ``&amp;``, ``&lt;`` and ``&gt;``.

Code is cut out first and put back last, so nothing inside it is rewritten;
links become opaque placeholders for the same reason. What this does not
know (tables, nested emphasis) passes through as text, which reads fine.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]+`")
_IMAGE_OR_LINK = re.compile(
    r"!?\[([^\]\n]*)\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+\"[^\"]*\")?\s*\)"
)
_AUTOLINK = re.compile(r"<(https?://[^>\s]+|mailto:[^>\s]+)>")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+", re.MULTILINE)
_QUOTE = re.compile(r"^ {0,3}&gt; ?", re.MULTILINE)  # after escaping: a Markdown quote line
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$", re.MULTILINE)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")
_ITALIC_STAR = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
# Private-use characters: they never occur in a model's text, and no regex above matches them.
_HOLD_OPEN, _HOLD_CLOSE = "\ue000", "\ue001"
_HELD = re.compile(f"{_HOLD_OPEN}(\\d+){_HOLD_CLOSE}")


def escape(text: str) -> str:
    """Slack's three control characters as entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _link_target(url: str) -> str:
    # Inside <...> a '|' would end the URL and a '>' the link; percent-encoding keeps both.
    return escape(url.replace("|", "%7C").replace(">", "%3E"))


class _Held:
    """Converted pieces kept out of the later rewrites, put back at the end."""

    def __init__(self) -> None:
        self.pieces: list[str] = []

    def hold(self, piece: str) -> str:
        self.pieces.append(piece)
        return f"{_HOLD_OPEN}{len(self.pieces) - 1}{_HOLD_CLOSE}"

    def restore(self, text: str) -> str:
        return _HELD.sub(lambda m: self.pieces[int(m.group(1))], text)


def to_mrkdwn(markdown: str) -> str:
    """The text Slack shows as ``markdown`` means: emphasis, links, code, lists."""
    held = _Held()
    text = markdown.replace(_HOLD_OPEN, "").replace(_HOLD_CLOSE, "")
    # Slack shows a fence's language tag as text, so the fence drops it.
    text = _FENCE.sub(lambda m: held.hold(f"```\n{escape(m.group(1))}```"), text)
    text = _CODE_SPAN.sub(lambda m: held.hold(escape(m.group(0))), text)
    text = _IMAGE_OR_LINK.sub(lambda m: held.hold(_link(m)), text)
    text = _AUTOLINK.sub(lambda m: held.hold(f"<{_link_target(m.group(1))}>"), text)
    text = escape(text)
    text = _QUOTE.sub("> ", text)  # Slack quotes with a raw '>' at the start of a line
    text = _RULE.sub("───", text)
    text = _HEADING.sub(lambda m: held.hold(f"*{_strip_emphasis(m.group(1))}*"), text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _ITALIC_STAR.sub(r"_\1_", text)
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _STRIKE.sub(r"~\1~", text)
    return held.restore(text)


def _link(match: re.Match[str]) -> str:
    url, label = match.group(2) or match.group(3), escape(match.group(1).strip())
    return f"<{_link_target(url)}|{label}>" if label else f"<{_link_target(url)}>"


def _strip_emphasis(heading: str) -> str:
    """A heading is shown bold; emphasis inside it would only add stray marks."""
    return heading.replace("**", "").replace("__", "")


_ENTITY = re.compile(r"<([^<>\n]+)>")


def to_plain(text: str) -> str:
    """What a person wrote in Slack, as plain text for the model.

    Slack sends messages escaped, with mentions and links as ``<...>``
    entities: ``<@U1>`` → ``@U1``, ``<#C1|general>`` → ``#general``,
    ``<!here>`` → ``@here``, ``<https://x|label>`` → ``label (https://x)``.
    """
    return _unescape(_ENTITY.sub(lambda m: _plain_entity(m.group(1)), text))


def _plain_entity(inner: str) -> str:
    target, _, label = inner.partition("|")
    if target.startswith(("@", "#")):
        return f"{target[0]}{label}" if label else target
    if target.startswith("!"):
        return f"@{label or target[1:].split('^')[0]}"
    target = _unescape(target)
    if not label or _unescape(label) == target.removeprefix("mailto:"):
        return target.removeprefix("mailto:")
    return f"{label} ({target})"


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
