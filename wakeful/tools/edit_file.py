"""edit_file: replace an exact piece of text in a workspace file.

Exact matching, and one match unless ``replace_all``, keeps an edit from
landing somewhere the model did not look; when the text is not there, the
error shows the lines that come closest so the next try can copy them. The
file is rewritten atomically like write_file's. It stays the agent's own in
the taint ledger only if it was before the edit.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import anyio
from pydantic import Field

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.tools.effect_text import current_text, file_change_effect
from wakeful.tools.file_access import (
    MAX_WRITE_BYTES,
    Unreadable,
    count_lines,
    is_own,
    locate_writable,
    read_whole,
    record_authorship,
    shown,
    write_atomically,
)
from wakeful.tools.files import cut
from wakeful.tools.written_files import WrittenFiles, digest

_CONTEXT = 3  # lines shown around an edit or a near miss
_MAX_SNIPPET = 20
_MAX_LINE_CHARS = 300
_MAX_LISTED = 10


@dataclass(frozen=True)
class _Edited:
    text: str
    count: int
    first_line: int  # 1-based line where the first replacement starts
    new_lines: int  # lines the replacement text spans


class EditFile:
    name = "edit_file"
    resident = True  # sent with its schema in every request (tool_surface.py)
    description = (
        "Change a text file in the workspace by exact string replacement: old_text must "
        "occur exactly once (copy it from read_file output, without the line numbers, "
        "with enough surrounding lines to be unique), or pass replace_all=true to replace "
        "every occurrence. Returns how many were replaced and the changed lines. When "
        "old_text is not found the error shows the closest lines; when it occurs more "
        "than once, the lines where. Files up to 5 MB; to create a file use write_file. "
        'Example: {"path": "src/app.py", "old_text": "DEBUG = True", '
        '"new_text": "DEBUG = False"}'
    )

    class Args(ToolArgs):
        path: str = Field(min_length=1, description="file path, relative to the workspace")
        old_text: str = Field(min_length=1, description="the exact text to replace")
        new_text: str = Field(description="what replaces it (may be empty)")
        replace_all: bool = Field(default=False, description="replace every occurrence")

    read_only = False
    effect = Effect.WRITE_WORKSPACE
    timeout_s: float | None = 30.0

    def __init__(self, written: WrittenFiles | None = None) -> None:
        self._written = written if written is not None else WrittenFiles()

    async def reach(self, a: Args) -> Reach:
        return Reach(paths=(a.path,), write_paths=(a.path,))

    async def describe_effect(self, a: Args, ctx: ToolContext) -> str:
        before = await anyio.to_thread.run_sync(current_text, a.path, ctx)
        if before is None:
            return f"edit {a.path}: no such text file in the workspace (nothing would change)"
        edited = _replace(before, a.old_text, a.new_text, a.replace_all)
        if isinstance(edited, str):
            return f"edit {a.path}: nothing would change ({edited.splitlines()[0]})"
        return file_change_effect(a.path, before, edited.text, ctx)

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        path = locate_writable(self.name, a.path, ctx)
        if isinstance(path, ToolOutput):
            return path
        if a.old_text == a.new_text:
            return ToolOutput(
                "old_text and new_text are the same, so nothing would change; send the "
                "text as it should read in new_text.",
                is_error=True,
            )
        try:
            before = await anyio.to_thread.run_sync(read_whole, path, a.path)
        except Unreadable as exc:
            return ToolOutput(f"edit_file: {exc}", is_error=True)
        own_before = await is_own(path, digest(before), ctx, self._written)
        # What is shown from here on are the file's own lines.
        untrusted = None if own_before else f"edit_file {path} (not written by the agent)"
        try:
            text = before.decode("utf-8")
        except UnicodeDecodeError:
            return ToolOutput(
                f"{a.path} is not UTF-8 text, so edit_file could change bytes it did not "
                "mean to; edit it with shell_exec (sed) instead.",
                is_error=True,
            )
        edited = _replace(text, a.old_text, a.new_text, a.replace_all)
        if isinstance(edited, str):
            return ToolOutput(edited, is_error=True, untrusted_source=untrusted)
        data = edited.text.encode("utf-8", errors="replace")
        if len(data) > MAX_WRITE_BYTES:
            return ToolOutput(
                f"the edited file would be {len(data)} bytes, more than the limit of "
                f"{MAX_WRITE_BYTES}; nothing was changed.",
                is_error=True,
            )
        try:
            await anyio.to_thread.run_sync(write_atomically, path, data)
        except Unreadable as exc:
            return ToolOutput(f"edit_file: {exc}", is_error=True)
        await record_authorship(self._written, path, data, ctx, own_before=own_before)
        return ToolOutput(
            _summary(shown(path, ctx), edited, len(data)),
            data={"path": str(path), "replacements": edited.count, "bytes": len(data)},
            untrusted_source=untrusted,
        )


def _replace(text: str, old: str, new: str, replace_all: bool) -> _Edited | str:
    """The edited text, or the error (with the lines that come closest)."""
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old:
        # The model copies lines without their "\r"; the file keeps its line endings.
        old, new = _crlf(old), _crlf(new)
        count = text.count(old)
    if count == 0:
        return _not_found(text, old)
    if count > 1 and not replace_all:
        lines = _match_lines(text, old)
        listed = ", ".join(str(n) for n in lines[:_MAX_LISTED])
        more = f" and {len(lines) - _MAX_LISTED} more" if len(lines) > _MAX_LISTED else ""
        return (
            f"old_text occurs {count} times (starting on lines {listed}{more}); include "
            "more of the surrounding lines so it occurs once, or pass replace_all=true to "
            "replace every occurrence."
        )
    start = text.index(old)
    replaced = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return _Edited(
        text=replaced,
        count=count,
        first_line=text.count("\n", 0, start) + 1,
        new_lines=max(1, count_lines(new)),
    )


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _match_lines(text: str, old: str) -> list[int]:
    lines, start = [], text.find(old)
    while start != -1:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(old, start + len(old))
    return lines


def _not_found(text: str, old: str) -> str:
    lines = text.splitlines()
    first = next((line.strip() for line in old.splitlines() if line.strip()), old.strip())
    stripped = [line.strip() for line in lines]
    same = [i for i, line in enumerate(stripped) if first and line == first]
    if same:
        where = same[:3]
        hint = (
            "a line with the same text but different indentation or spacing is shown below; "
            "copy old_text exactly as it appears there"
        )
    else:
        close = difflib.get_close_matches(first, [s for s in stripped if s], n=3, cutoff=0.6)
        where = sorted({stripped.index(c) for c in close})
        hint = "the closest lines are shown below" if where else ""
    head = f"old_text was not found in the file (its first line: {cut(first, 120)!r})"
    if not where:
        return (
            f"{head}, and no line resembles it; read the file with read_file and copy the "
            "exact text."
        )
    shown_blocks = [_numbered(lines, i + 1 - _CONTEXT, i + 1 + _CONTEXT) for i in where]
    return f"{head}; {hint}:\n" + "\n...\n".join(shown_blocks)


def _numbered(lines: list[str], first: int, last: int) -> str:
    first, last = max(1, first), min(len(lines), last)
    return "\n".join(
        f"{n:>6}\t{cut(lines[n - 1], _MAX_LINE_CHARS)}" for n in range(first, last + 1)
    )


def _summary(name: str, edited: _Edited, size: int) -> str:
    lines = edited.text.splitlines()
    first = edited.first_line
    last = min(first + edited.new_lines - 1, first + _MAX_SNIPPET - 1)
    what = "occurrence" if edited.count == 1 else "occurrences"
    head = (
        f"replaced {edited.count} {what} in {name}; the file now has "
        f"{count_lines(edited.text)} lines ({size} bytes)."
    )
    if not lines:
        return f"{head} It is now empty."
    snippet = _numbered(lines, first - _CONTEXT, last + _CONTEXT)
    where = "the first change" if edited.count > 1 else "the change"
    return f"{head} Around {where}:\n{snippet}"
