"""Markdown (what the model writes) to a Matrix message's ``body`` and ``formatted_body``.

CommonMark via markdown-it-py, with tables and strikethrough, which Matrix
clients render (the spec's allowed HTML has them). Raw HTML in the text is
escaped, not passed on: a reply is never markup the model did not mean.
"""

from __future__ import annotations

import html
from typing import Any

from markdown_it import MarkdownIt

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(
    ["table", "strikethrough"]
)
# A Matrix event is at most 64 KiB of JSON; past this the HTML twin is dropped.
MAX_CONTENT_BYTES = 60_000


def message_content(markdown: str, msgtype: str = "m.text") -> dict[str, Any]:
    """An m.room.message content (``m.text`` or ``m.notice``): the Markdown as body, its
    HTML as formatted_body."""
    content: dict[str, Any] = {"msgtype": msgtype, "body": markdown}
    rendered = _MARKDOWN.render(markdown).strip()
    if rendered and rendered != f"<p>{_escape(markdown)}</p>":  # plain text needs no HTML twin
        content["format"] = "org.matrix.custom.html"
        content["formatted_body"] = rendered
        if len((markdown + rendered).encode()) > MAX_CONTENT_BYTES:
            del content["format"], content["formatted_body"]
    return content


def _escape(text: str) -> str:
    """As markdown-it escapes a paragraph's text (it leaves apostrophes alone)."""
    return html.escape(text, quote=True).replace("&#x27;", "'")
