"""read_file: page through a text file by lines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic import Field

from wakeful.handlers.base import ToolArgs, ToolContext, ToolOutput
from wakeful.safety.effects import Effect, Reach

MAX_LIMIT = 2000
MAX_LINE_CHARS = 2000
# Stop a page early rather than return more than this; the note says where to resume.
MAX_PAGE_CHARS = 40_000
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class _Page:
    lines: list[str]  # already numbered
    total: int


class ReadFile:
    name = "read_file"
    description = (
        "Read a text file by lines: returns numbered lines plus 'lines X-Y of Z' and the "
        "offset to pass to read the next page. offset is the number of lines to skip "
        "(0 = from the start), limit how many lines to return (default 200, max 2000). "
        "Relative paths are inside the workspace; absolute paths are allowed, which is how "
        "you read the full output files other tools mention. It cannot list directories "
        "or read binary files (use shell_exec with ls, file or xxd for those); lines "
        "longer than 2000 characters are cut. "
        'Example: {"path": "src/app.py", "offset": 200, "limit": 100}'
    )

    class Args(ToolArgs):
        path: str = Field(min_length=1, description="file path, relative to the workspace")
        offset: int = Field(default=0, ge=0, description="lines to skip from the start")
        limit: int = Field(default=200, ge=1, le=MAX_LIMIT, description="lines to return")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 30.0

    async def reach(self, a: Args) -> Reach:
        return Reach(paths=(a.path,))

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        candidate = Path(a.path)
        path = candidate if candidate.is_absolute() else ctx.workspace / candidate
        problem = await anyio.to_thread.run_sync(_check, path, a.path)
        if problem is not None:
            return ToolOutput(problem, is_error=True)
        try:
            page = await anyio.to_thread.run_sync(_read_page, path, a.offset, a.limit)
        except OSError as exc:
            return ToolOutput(f"cannot read {path}: {exc}", is_error=True)
        return _format(path, page, a.offset)


def _check(path: Path, given: str) -> str | None:
    """What stops ``path`` from being read as text, or None."""
    if not path.exists():
        return (
            f"no such file: {given} (resolved to {path}). Check the name, or list the "
            "directory with shell_exec (ls) or search with shell_exec (find . -name ...)."
        )
    if path.is_dir():
        return f"{path} is a directory; list it with shell_exec: ls -la {path}"
    try:
        with path.open("rb") as f:
            sample = f.read(_SNIFF_BYTES)
    except OSError as exc:
        return f"cannot read {path}: {exc}"
    if b"\0" in sample:
        return (
            f"{path} looks binary (it contains NUL bytes), so read_file cannot show it; use "
            f"shell_exec with 'file {path}', 'strings {path} | head' or 'xxd {path} | head'."
        )
    return None


def _read_page(path: Path, offset: int, limit: int) -> _Page:
    shown: list[str] = []
    chars = 0
    total = 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for total, line in enumerate(f, start=1):
            if total <= offset or len(shown) >= limit or chars >= MAX_PAGE_CHARS:
                continue
            text = _cut(line.rstrip("\r\n"))
            numbered = f"{total:>6}\t{text}"
            shown.append(numbered)
            chars += len(numbered) + 1
    return _Page(lines=shown, total=total)


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [{len(line) - MAX_LINE_CHARS} more characters cut]"


def _format(path: Path, page: _Page, offset: int) -> ToolOutput:
    data = {"path": str(path), "total_lines": page.total}
    if page.total == 0:
        return ToolOutput(f"{path} is empty (0 lines)", data=data)
    if not page.lines:
        return ToolOutput(
            f"offset {offset} is past the end of {path}, which has {page.total} lines; "
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
