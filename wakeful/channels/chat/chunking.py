"""Splitting a long reply into messages a platform accepts, at readable places."""

from __future__ import annotations

FENCE = "```"


def split_message(text: str, limit: int) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at a paragraph, else a line,
    else a space, else anywhere; a code fence cut in two is closed at the end of
    one piece and reopened at the start of the next, so each renders alone."""
    if limit < 16:
        raise ValueError("limit must be at least 16 characters")
    text = text.strip() or text
    pieces: list[str] = []
    rest = text
    reopen = ""
    while True:
        rest = reopen + rest
        if len(rest) <= limit:
            pieces.append(rest)
            return pieces
        room = limit - len(FENCE) - 1  # space to close a fence left open
        cut = _cut_at(rest, room)
        piece, rest = rest[:cut].rstrip(), rest[cut:].lstrip("\n")
        fence = _open_fence(piece)
        if fence is not None:
            piece += "\n" + FENCE
            reopen = (fence if len(fence) <= 24 else FENCE) + "\n"
        else:
            reopen = ""
        pieces.append(piece)


def _cut_at(text: str, room: int) -> int:
    window = text[: room + 1]
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator)
        if at > room // 2:
            return at + (len(separator) if separator == " " else 0)
    return room


def _open_fence(piece: str) -> str | None:
    """The fence line (with its language) left open at the end of ``piece``."""
    opened: str | None = None
    for line in piece.splitlines():
        stripped = line.strip()
        if stripped.startswith(FENCE):
            opened = None if opened is not None else stripped
    return opened
