"""find_file: list the files and directories under a workspace directory that match a name.

A sorted, capped listing of paths relative to the workspace, so each can go
straight to read_file or grep. Like grep it never leaves the workspace, never
enters ``.git`` or a symlinked directory, and stops on a time budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from pydantic import Field

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.tools.file_access import Entry, glob_matches, locate_readable, shown, walk

MAX_LIMIT = 1000
SEARCH_BUDGET_S = 10.0
_WILDCARDS = frozenset("*?[")


@dataclass
class _Found:
    entries: list[Entry] = field(default_factory=list)
    walked: int = 0
    out_of_time: bool = False


class FindFile:
    name = "find_file"
    group = "files"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Find files and directories by name under a directory of the workspace (default: "
        "all of it): returns their paths relative to the workspace, sorted, directories "
        "ending in '/'. pattern is a glob on the name ('*.py', 'test_*'), or on the path "
        "when it has a '/' ('docs/*.md', '**/config.toml'); a pattern without * ? [ "
        "finds names containing it. Skips .git; at most limit paths (default 200, max "
        "1000) and 10 s of walking. "
        'Example: {"pattern": "*.md", "path": "docs"}'
    )

    class Args(ToolArgs):
        pattern: str = Field(min_length=1, description="glob or part of a name, e.g. '*.py'")
        path: str = Field(default=".", min_length=1, description="directory to search")
        limit: int = Field(default=200, ge=1, le=MAX_LIMIT, description="paths to return")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 30.0

    async def reach(self, a: Args) -> Reach:
        return Reach(paths=(a.path,))

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        root = locate_readable(self.name, a.path, ctx)
        if isinstance(root, ToolOutput):
            return root
        if not root.is_dir():
            what = "is a file, not a directory" if root.exists() else "does not exist"
            return ToolOutput(
                f"{a.path} (resolved to {root}) {what}; pass the directory to search in "
                'path (default ".", the whole workspace).',
                is_error=True,
            )
        found = await anyio.to_thread.run_sync(_find, root, a.pattern)
        names = sorted(shown(e.path, ctx) + ("/" if e.is_dir else "") for e in found.entries)
        listed = names[: a.limit]
        where = shown(root, ctx)
        if names:
            summary = f"{len(names)} matches for {a.pattern!r} under {where}"
        else:
            summary = f"nothing under {where} matches {a.pattern!r}"
        notes = [f"{found.walked} entries looked at"]
        if len(names) > a.limit:
            notes.append(
                f"showing the first {a.limit}; {len(names) - a.limit} more not shown: narrow "
                "the pattern or path, or raise limit"
            )
        if found.out_of_time:
            notes.append(
                f"stopped after {SEARCH_BUDGET_S:g} s of walking; narrow the path to see the rest"
            )
        return ToolOutput(
            "\n".join([*listed, f"({'; '.join([summary, *notes])})"]),
            data={"matches": len(names), "shown": len(listed)},
        )


def _find(root: Path, pattern: str) -> _Found:
    found = _Found()
    deadline = time.monotonic() + SEARCH_BUDGET_S
    for entry in walk(root):
        found.walked += 1
        if found.walked % 1024 == 0 and time.monotonic() > deadline:
            found.out_of_time = True
            break
        if _matches(pattern, entry):
            found.entries.append(entry)
    return found


def _matches(pattern: str, entry: Entry) -> bool:
    if _WILDCARDS.isdisjoint(pattern):
        return pattern.lower() in entry.path.name.lower()
    return glob_matches(pattern, entry)
