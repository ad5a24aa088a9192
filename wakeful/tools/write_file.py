"""write_file: create or replace a text file inside the workspace, atomically.

The whole file is written to a temporary file beside it and renamed over the
old one, so nothing ever sees half a file. What it wrote is recorded in the
taint ledger (unless the session is tainted: then the text may be a third
party's, and the file is not counted as the agent's own).
"""

from __future__ import annotations

import anyio
from pydantic import Field

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.tools.effect_text import current_text, file_change_effect
from wakeful.tools.file_access import (
    MAX_WRITE_BYTES,
    Unreadable,
    count_lines,
    locate_writable,
    record_authorship,
    shown,
    write_atomically,
)
from wakeful.tools.written_files import WrittenFiles


class WriteFile:
    name = "write_file"
    resident = True  # sent with its schema in every request (tool_surface.py)
    description = (
        "Create a text file or replace one completely, inside the workspace: missing "
        "parent directories are created, the file is replaced atomically (readers see the "
        "old or the new content, never half) and an existing file keeps its permissions. "
        "Returns the bytes and lines written. At most 5 MB of UTF-8 text; paths are "
        "relative to the workspace and may not lead outside it (symlinks are followed "
        "before that check). To change part of a file use edit_file instead. "
        'Example: {"path": "notes/todo.md", "content": "- call the bank\\n"}'
    )

    class Args(ToolArgs):
        path: str = Field(min_length=1, description="file path, relative to the workspace")
        content: str = Field(description="the file's complete new text")

    read_only = False
    effect = Effect.WRITE_WORKSPACE
    timeout_s: float | None = 30.0

    def __init__(self, written: WrittenFiles | None = None) -> None:
        self._written = written if written is not None else WrittenFiles()

    async def reach(self, a: Args) -> Reach:
        return Reach(paths=(a.path,), write_paths=(a.path,))

    async def describe_effect(self, a: Args, ctx: ToolContext) -> str:
        before = await anyio.to_thread.run_sync(current_text, a.path, ctx)
        return file_change_effect(a.path, before, a.content, ctx)

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        path = locate_writable(self.name, a.path, ctx)
        if isinstance(path, ToolOutput):
            return path
        data = a.content.encode("utf-8", errors="replace")
        if len(data) > MAX_WRITE_BYTES:
            return ToolOutput(
                f"content is {len(data)} bytes, more than write_file's limit of "
                f"{MAX_WRITE_BYTES} bytes; write the file in parts with edit_file, or "
                "generate it with a command.",
                is_error=True,
            )
        try:
            previous = await anyio.to_thread.run_sync(write_atomically, path, data)
        except Unreadable as exc:
            return ToolOutput(f"write_file: {exc}", is_error=True)
        await record_authorship(self._written, path, data, ctx, own_before=True)
        lines = count_lines(a.content)
        what = "created" if previous is None else f"replaced (was {previous} bytes)"
        return ToolOutput(
            f"wrote {len(data)} bytes, {lines} lines to {shown(path, ctx)}: {what}",
            data={"path": str(path), "bytes": len(data), "lines": lines},
        )
