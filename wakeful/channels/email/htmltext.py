"""HTML mail bodies as readable plain text (links kept, scripts and styles dropped)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK = frozenset(
    {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol"}
)
_SKIP = frozenset({"script", "style", "head", "title"})


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0
        self._href: str | None = None
        # Cells seen in each open row, innermost last: a table nested in a cell
        # keeps its own count, so its first cell gets no separator.
        self._cells: list[int] = []
        self._tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skipping += 1
        elif self._in_cell(tag):
            self.parts.append(" ")
        elif tag in _BLOCK and not (
            tag == "tr" and "".join(self.parts[-2:]).rstrip(" ").endswith("\n")
        ):
            self.parts.append("\n")  # rows of a table on consecutive lines, no blank between
        if tag == "table":
            self._tables += 1
        if tag == "tr":
            self._cells.append(0)
        elif tag in ("td", "th") and self._cells:
            if self._cells[-1]:
                self.parts.append(" | ")  # cells of a row side by side, never run together
            self._cells[-1] += 1
        if tag == "li":
            self.parts.append("- ")
        if tag == "a":
            self._href = dict(attrs).get("href")

    def _at_line_start(self) -> bool:
        return "".join(self.parts[-2:]).rstrip(" ").endswith("\n")

    def _in_cell(self, tag: str) -> bool:
        """A line-breaking tag inside a table row (Thunderbird ends every cell with
        <br>): a space there, so the row stays on one line."""
        return bool(self._cells) and tag in _BLOCK and tag not in ("table", "tr")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif self._in_cell(tag):
            self.parts.append(" ")
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag == "tr" and self._cells:
            self._cells.pop()
        if tag == "table":
            self._tables = max(0, self._tables - 1)
        if tag == "a" and self._href and self._href.startswith(("http://", "https://")):
            self.parts.append(f" <{self._href}>")
            self._href = None

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._tables and data.isspace():
            # the source's line breaks between cells and rows are layout, not text
            self.parts.append(" ")
            return
        self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r" *\n *", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
