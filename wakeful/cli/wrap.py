"""Lines that fit the terminal, broken at spaces where they can be.

The chat prints a reply itself rather than leaving long lines to the terminal:
a terminal breaks them mid-word, and the streamed reply's unfinished line is
drawn above the prompt, where a line wider than the screen stops being redrawn
(the reply seemed to freeze after one row until its paragraph ended). Widths
are display cells (wcwidth), so CJK text and emoji fit too. One cell is left
free at the right edge: writing the last cell leaves terminals in a pending
wrap that line editors redraw differently.
"""

from __future__ import annotations

from wcwidth import wcwidth


def _cells(char: str) -> int:
    return max(wcwidth(char), 0)  # control characters take no cell


def fit(text: str, columns: int) -> tuple[list[str], str]:
    """Cut whole rows from the front of one line of ``text``: the rows, and the rest,
    which fits in a row (so it can be drawn, and grown, above the prompt)."""
    limit = max(columns - 1, 1)
    rows: list[str] = []
    while True:
        cut = _cut(text, limit)
        if cut is None:
            return rows, text
        rows.append(text[:cut].rstrip(" "))
        text = text[cut:].lstrip(" ")


def wrap(text: str, columns: int) -> list[str]:
    """Every line of ``text`` broken into rows of at most ``columns - 1`` cells."""
    rows: list[str] = []
    for line in text.split("\n"):
        whole, rest = fit(line, columns)
        rows += [*whole, rest]
    return rows


def _cut(text: str, limit: int) -> int | None:
    """Where the first row of ``text`` ends; None when all of it fits in ``limit`` cells."""
    used = 0
    for index, char in enumerate(text):
        used += _cells(char)
        if used > limit:
            space = text.rfind(" ", 0, index + 1)
            # At a space if there is one after some text; a word wider than a row is cut.
            return space if space > 0 else max(index, 1)
    return None
