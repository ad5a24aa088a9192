"""The effect texts the tools give for an approval (wakeful/safety/call_effect.py).

Each says, in plain words and in full, what running the call would do: the
command and where it runs, the file and how it would change. Nothing is cut
here; a view that must be short says what it left out.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from wakeful.core.tool import ToolContext
from wakeful.safety.confinement import Outside, resolve_inside


def short_command(command: str, limit: int = 80) -> str:
    """A command on one line, cut with an ellipsis: for names and headers, never for
    what an approval shows (that is :func:`command_effect`, in full)."""
    one_line = " ".join(command.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def command_effect(verb: str, command: str, cwd_arg: str | None, ctx: ToolContext) -> str:
    where = resolve_inside(cwd_arg, ctx.workspace) if cwd_arg else ctx.workspace
    place = f"outside the workspace ({cwd_arg!r}): refused" if isinstance(where, Outside) else where
    return f"{verb} in {place}:\n{command}"


def file_change_effect(given: str, before: str | None, after: str, ctx: ToolContext) -> str:
    """``given`` created (``before`` None) or changed, as a unified diff."""
    where = resolve_inside(given, ctx.workspace)
    path = f"{given} (outside the workspace: refused)" if isinstance(where, Outside) else where
    if before is None:
        lines = after.count("\n") + (0 if after.endswith("\n") or not after else 1)
        return f"create {path} ({lines} lines, {len(after.encode())} bytes):\n{after}"
    diff = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"{path} (now)",
        tofile=f"{path} (after)",
        n=3,
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in diff)
    return f"change {path}:\n{text}" if text else f"rewrite {path} with the same content"


def current_text(given: str, ctx: ToolContext) -> str | None:
    """The file's text now, or None when it does not exist (or cannot be read as text)."""
    where = resolve_inside(given, ctx.workspace)
    if isinstance(where, Outside):
        return None
    path = Path(where)
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        return None
