"""An HTML page as the text a reader sees: what fetch_url gives the model.

Markup costs tokens and says little; scripts and styles are not text at all.
What is kept is the title, headings (as ``#`` lines), paragraphs and list items
on lines of their own, preformatted text as is, and each link's text followed
by where it points, so the model can fetch it next.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

# Content that is not text for a reader.
_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe"})
_BLOCKS = frozenset(
    {"address", "article", "aside", "blockquote", "dd", "details", "div", "dl", "dt",
     "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main",
     "nav", "ol", "p", "pre", "section", "summary", "table", "tr", "ul", "br"}
)  # fmt: skip
_HEADINGS = {f"h{level}": "#" * level for level in range(1, 7)}
_SPACES = re.compile(r"[ \t\r\n\f\v]+")
_BLANK_LINES = re.compile(r"\n{3,}")


class _Reader(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self._base_url = base_url
        self._parts: list[str] = []
        self._skipping: list[str] = []  # open skipped elements, innermost last
        self._pre = 0
        self._title: list[str] = []
        self._in_title = False
        self._href: str | None = None
        self._link_start = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIPPED:
            self._skipping.append(tag)
        if self._skipping:
            return
        if tag in _BLOCKS or tag in _HEADINGS:
            self._parts.append("\n")
        if tag in _HEADINGS:
            self._parts.append(f"{_HEADINGS[tag]} ")
        elif tag == "li":
            self._parts.append("- ")
        elif tag == "pre":
            self._pre += 1
        elif tag in ("td", "th"):
            self._parts.append(" | ")
        elif tag == "a":
            self._href = dict(attrs).get("href")
            self._link_start = len(self._parts)
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self._parts.append(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skipping:
            if tag == self._skipping[-1]:
                self._skipping.pop()
            return
        if tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag == "a":
            self._close_link()
        # Items start their own line; a blank line after each would only cost tokens.
        if (tag in _BLOCKS and tag not in ("li", "tr", "dt", "dd")) or tag in _HEADINGS:
            self._parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
        if self._skipping:
            return
        if self._pre:
            self._parts.append(data)
            return
        text = _SPACES.sub(" ", data)
        if not self._parts or self._parts[-1].endswith((" ", "\n")):
            text = text.lstrip()  # no space at a line's start or doubled
        if text:
            self._parts.append(text)

    def _close_link(self) -> None:
        href, self._href = self._href, None
        text = "".join(self._parts[self._link_start :]).strip()
        if not href or not text or href.startswith(("#", "javascript:", "mailto:")):
            return
        target = urljoin(self._base_url, href.strip())
        if target != text:
            self._parts.append(f" ({target})")

    def text(self) -> str:
        body = "".join(self._parts)
        lines = [line.rstrip() for line in body.split("\n")]
        joined = _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
        title = _SPACES.sub(" ", "".join(self._title)).strip()
        return f"Title: {title}\n\n{joined}" if title else joined


def html_to_text(html: str, base_url: str) -> str:
    """The readable text of ``html``; relative links are made absolute against ``base_url``."""
    reader = _Reader(base_url)
    reader.feed(html)
    reader.close()
    return reader.text()
