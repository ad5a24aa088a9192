"""read_file: page through a text file by lines, inside the workspace or the saved outputs.

The path is resolved (symlinks, ``..``) and must land in the workspace or, read-
only, in the directory where tools save full outputs; anything else (``/etc``,
the data directory with the admin token) is refused with where it resolved.
A file whose bytes are not what the agent itself wrote taints the session.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic import Field

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.tools.file_access import (
    Unreadable,
    is_own,
    locate_readable,
    scan_text,
    shown,
)
from wakeful.tools.written_files import WrittenFiles

MAX_LIMIT = 2000
MAX_LINE_CHARS = 2000
# Stop a page early rather than return more than this; the note says where to resume.
MAX_PAGE_CHARS = 40_000


@dataclass(frozen=True)
class _Page:
    lines: list[str]  # already numbered
    total: int


class ReadFile:
    name = "read_file"
    resident = True  # sent with its schema in every request (tool_surface.py)
    description = (
        "Read a text file by lines: returns numbered lines plus 'lines X-Y of Z' and the "
        "offset to pass to read the next page. offset is the number of lines to skip "
        "(0 = from the start), limit how many lines to return (default 200, max 2000). "
        "Paths are relative to the workspace; an absolute path must lie inside the "
        "workspace or the directory of saved full outputs (that is how you read the "
        "output files other tools mention); symlinks are followed before that check. "
        "It cannot list directories (use find_file) or read binary files; lines longer "
        "than 2000 characters are cut. "
        'Example: {"path": "src/app.py", "offset": 200, "limit": 100}'
    )

    class Args(ToolArgs):
        path: str = Field(min_length=1, description="file path, relative to the workspace")
        offset: int = Field(default=0, ge=0, description="lines to skip from the start")
        limit: int = Field(default=200, ge=1, le=MAX_LIMIT, description="lines to return")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 30.0

    def __init__(self, written: WrittenFiles | None = None) -> None:
        self._written = written if written is not None else WrittenFiles()

    async def reach(self, a: Args) -> Reach:
        return Reach(paths=(a.path,))

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        path = locate_readable(self.name, a.path, ctx)
        if isinstance(path, ToolOutput):
            return path

        def page(lines: Iterable[str]) -> _Page:
            return _read_page(lines, a.offset, a.limit)

        try:
            scanned = await anyio.to_thread.run_sync(scan_text, path, a.path, page)
        except Unreadable as exc:
            return ToolOutput(str(exc), is_error=True)
        output = _format(shown(path, ctx), path, scanned.result, a.offset)
        if await is_own(path, scanned.sha256, ctx, self._written):
            return output
        return ToolOutput(
            output.text,
            is_error=output.is_error,
            data=output.data,
            untrusted_source=f"read_file {path} (not written by the agent)",
        )


def _read_page(lines: Iterable[str], offset: int, limit: int) -> _Page:
    shown_lines: list[str] = []
    chars = 0
    total = 0
    for total, line in enumerate(lines, start=1):
        if total <= offset or len(shown_lines) >= limit or chars >= MAX_PAGE_CHARS:
            continue
        text = cut(line.rstrip("\r\n"), MAX_LINE_CHARS)
        numbered = f"{total:>6}\t{text}"
        shown_lines.append(numbered)
        chars += len(numbered) + 1
    return _Page(lines=shown_lines, total=total)


def cut(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}... [{len(line) - limit} more characters cut]"


def _format(name: str, path: Path, page: _Page, offset: int) -> ToolOutput:
    data = {"path": str(path), "total_lines": page.total}
    if page.total == 0:
        return ToolOutput(f"{name} is empty (0 lines)", data=data)
    if not page.lines:
        return ToolOutput(
            f"offset {offset} is past the end of {name}, which has {page.total} lines; "
            f"use an offset from 0 to {page.total - 1}.",
            is_error=True,
            data=data,
        )
    first, last = offset + 1, offset + len(page.lines)
    if last >= page.total:
        note = f"lines {first}-{last} of {page.total} (end of file)"
    else:
        note = (
            f"lines {first}-{last} of {page.total}; to read more call read_file with "
            f"offset={last}, limit={len(page.lines)}"
        )
    return ToolOutput("\n".join([*page.lines, note]), data=data)
