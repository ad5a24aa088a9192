"""Telegram's parse_mode HTML as its server reads it, for the fake Bot API.

Telegram takes a handful of tags and the entities ``&lt; &gt; &amp; &quot;``
and numeric ones; an unknown or unbalanced tag, or a bare ``<``, ``>`` or
``&``, refuses the whole message ("can't parse entities"). The 4096-character
limit counts what is left once the markup is parsed: :func:`visible_text`.
"""

from __future__ import annotations

import html
import re

_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z-]*)((?:\s[^<>]*)?)>")
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);")
_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler",
         "a", "tg-emoji", "code", "pre", "blockquote"}  # fmt: skip


class CannotParse(ValueError):
    """Telegram's 400 "can't parse entities"."""


def visible_text(text: str) -> str:
    """What a user sees of a parse_mode HTML text; CannotParse where Telegram refuses it."""
    stack: list[str] = []
    out: list[str] = []
    position = 0
    for match in _TAG.finditer(text):
        out.append(_plain(text[position : match.start()], match.start()))
        position = match.end()
        closing, name = match.group(1), match.group(2).lower()
        if name not in _TAGS:
            raise CannotParse(f'Unsupported start tag "{name}" at byte offset {match.start()}')
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            raise CannotParse(
                f'Unmatched end tag at byte offset {match.start()}, expected "</{name}>"'
            )
    out.append(_plain(text[position:], position))
    if stack:
        raise CannotParse(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return "".join(out)


def _plain(piece: str, offset: int) -> str:
    if "<" in piece or ">" in piece:
        raise CannotParse(f"Unexpected end of name token at byte offset {offset}")
    if piece.count("&") != len(_ENTITY.findall(piece)):
        raise CannotParse(f"Character entity expected at byte offset {offset}")
    return html.unescape(piece)
