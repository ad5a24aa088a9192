"""grep: search file contents under a workspace directory with a regular expression.

Results are ``path:line: text`` so each can be opened with read_file at that
line. The walk never leaves the workspace (symlinks out are skipped, symlinked
directories not entered), skips binary files and ``.git``, and stops at a cap
on results and on time, saying so. Matches from a file the agent did not write
taint the session, as read_file's would.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from pydantic import Field

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.tools.file_access import (
    BinaryFile,
    Entry,
    Unreadable,
    glob_matches,
    is_own,
    locate_readable,
    scan_text,
    shown,
    walk,
)
from wakeful.tools.files import cut
from wakeful.tools.written_files import WrittenFiles

MAX_LIMIT = 500
_MAX_LINE_CHARS = 300
# The walk stops here and says so: the caller's answer must come before the call's timeout.
SEARCH_BUDGET_S = 20.0


@dataclass
class _FileHits:
    path: Path
    name: str
    sha256: str | None
    hits: list[tuple[int, str]]


@dataclass
class _Search:
    files: list[_FileHits] = field(default_factory=list)
    searched: int = 0
    binary: int = 0
    unreadable: int = 0
    links_out: int = 0
    more: bool = False  # stopped at the cap with more matches to come
    out_of_time: bool = False

    @property
    def matches(self) -> int:
        return sum(len(f.hits) for f in self.files)


class Grep:
    name = "grep"
    group = "files"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Search the contents of text files under a directory of the workspace (default: "
        "all of it) for a regular expression (Python syntax); returns one line per match "
        "as 'path:line: text', paths relative to the workspace, then how many files were "
        "searched. glob limits the files by name ('*.py'), or by path when it has a '/' "
        "('src/**/*.py'); ignore_case matches regardless of case; literal=true searches "
        "for the pattern as plain text. Skips binary files and .git; lines are cut at 300 "
        "characters; at most limit matches (default 100, max 500) and 20 s of searching. "
        'Example: {"pattern": "def (load|save)_", "path": "src", "glob": "*.py"}'
    )

    class Args(ToolArgs):
        pattern: str = Field(min_length=1, description="regular expression to search for")
        path: str = Field(default=".", min_length=1, description="directory or file to search")
        glob: str | None = Field(default=None, description="only files matching this glob")
        ignore_case: bool = Field(default=False, description="match regardless of case")
        literal: bool = Field(default=False, description="pattern is plain text, not a regex")
        limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="matches to return")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 30.0

    def __init__(self, written: WrittenFiles | None = None) -> None:
        self._written = written if written is not None else WrittenFiles()

    async def reach(self, a: Args) -> Reach:
        return Reach(paths=(a.path,))

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        root = locate_readable(self.name, a.path, ctx)
        if isinstance(root, ToolOutput):
            return root
        flags = re.IGNORECASE if a.ignore_case else 0
        try:
            regex = re.compile(re.escape(a.pattern) if a.literal else a.pattern, flags)
        except re.error as exc:
            return ToolOutput(
                f"pattern is not a valid regular expression ({exc}); escape special "
                "characters with a backslash (\\( \\[ \\.) or pass literal=true.",
                is_error=True,
            )
        if not root.exists():
            return ToolOutput(
                f"no such file or directory: {a.path} (resolved to {root}); search the "
                'whole workspace with path "." or find it with find_file.',
                is_error=True,
            )
        search = await anyio.to_thread.run_sync(
            _search, root, regex, a.glob, a.limit, ctx.workspace, ctx.output_dir
        )
        for hits in search.files:
            hits.name = shown(hits.path, ctx)
        foreign = [
            f for f in search.files if not await is_own(f.path, f.sha256, ctx, self._written)
        ]
        untrusted = None
        if foreign:
            others = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            untrusted = f"grep {foreign[0].path}{others} (not written by the agent)"
        return ToolOutput(
            _format(search, a.pattern, shown(root, ctx)),
            data={"matches": search.matches, "files_searched": search.searched},
            untrusted_source=untrusted,
        )


def _search(
    root: Path,
    regex: re.Pattern[str],
    glob: str | None,
    limit: int,
    workspace: Path,
    output_dir: Path,
) -> _Search:
    search = _Search()
    deadline = time.monotonic() + SEARCH_BUDGET_S
    prefilter = whole_text_filter(regex)
    entries: Iterable[Entry] = [Entry(root, root.name, False)] if root.is_file() else walk(root)
    for entry in entries:
        if entry.is_dir or (glob is not None and not glob_matches(glob, entry)):
            continue
        if time.monotonic() > deadline:
            search.out_of_time = True
            break
        target = entry.path
        if entry.path.is_symlink():
            resolved = resolve_inside(str(entry.path), workspace, also=(output_dir,))
            if isinstance(resolved, Outside):
                search.links_out += 1
                continue
            target = resolved
        remaining = limit - search.matches

        def matching(lines: Iterable[str], budget: int = remaining) -> list[tuple[int, str]]:
            found: list[tuple[int, str]] = []
            for number, raw in enumerate(lines, start=1):
                line = raw.rstrip("\r\n")  # a line is matched without its end, as grep(1) does
                if regex.search(line):
                    found.append((number, cut(line, _MAX_LINE_CHARS)))
                    if len(found) > budget:  # one past the cap: there is more
                        break
                if number % 4096 == 0 and time.monotonic() > deadline:
                    break
            return found

        try:
            scanned = scan_text(target, entry.relative, matching, prefilter=prefilter)
        except BinaryFile:
            search.binary += 1
            continue
        except Unreadable:
            search.unreadable += 1
            continue
        search.searched += 1
        found = scanned.result
        if len(found) > remaining:
            found, search.more = found[:remaining], True
        if found:
            search.files.append(_FileHits(target, str(target), scanned.sha256, found))
        if search.more:
            break
    return search


# Constructs whose meaning changes between one line and the whole text (text start
# and end, looking back or ahead for an absence): with them, every line is searched.
_LINE_ONLY = ("\\A", "\\Z", "(?<", "(?!")


def whole_text_filter(regex: re.Pattern[str]) -> re.Pattern[str] | None:
    """A pattern that finds something in a file's whole text whenever ``regex`` finds
    something in one of its lines (with MULTILINE, ^ and $ still mean a line's start and
    end), or None when that cannot be promised."""
    if any(construct in regex.pattern for construct in _LINE_ONLY):
        return None
    return re.compile(regex.pattern, regex.flags | re.MULTILINE)


def _format(search: _Search, pattern: str, where: str) -> str:
    lines = [f"{f.name}:{number}: {text}" for f in search.files for number, text in f.hits]
    files = "file" if search.searched == 1 else "files"
    if lines:
        summary = (
            f"{search.matches} matches in {len(search.files)} of {search.searched} {files} "
            f"searched under {where}"
        )
    else:
        summary = f"no matches for {pattern!r} in {search.searched} {files} searched under {where}"
    notes = []
    if search.more:
        notes.append(
            f"stopped at {search.matches} matches; there are more: narrow the pattern, path or "
            "glob, or raise limit"
        )
    if search.out_of_time:
        notes.append(
            f"stopped after {SEARCH_BUDGET_S:g} s of searching; narrow the path or glob to "
            "search the rest"
        )
    if search.binary:
        notes.append(f"{search.binary} binary files skipped")
    if search.links_out:
        notes.append(f"{search.links_out} symlinks leading outside the workspace skipped")
    if search.unreadable:
        notes.append(f"{search.unreadable} files could not be read")
    tail = "; ".join([summary, *notes])
    return "\n".join([*lines, f"({tail})"])
