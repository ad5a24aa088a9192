"""The memory tools: remember, memory_search, memory_get.

remember's result is the daemon's own words (the id and where the entry went).
memory_search and memory_get vouch per result: the owner's lines and the agent's
own entries are trusted; an entry still in review, and past conversation that the
owner did not type, are quoted as third-party data and taint the session reading
them — a stranger's words saved last week must not act this week.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Literal

from pydantic import Field, field_validator

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.core.trajectory.rendering import quote_untrusted
from wakeful.memory.book import MemoryBook
from wakeful.memory.entries import EntryKind, EntryStatus
from wakeful.memory.files import MAX_ENTRY_CHARS, REVIEW_FILE, MemoryPathError, day_file
from wakeful.memory.index import Hit
from wakeful.memory.search import MemorySearch

MAX_DAYS = 31  # of daily notes one memory_get returns


class Remember:
    name = "remember"
    description = (
        "Save something to long-term memory, so a later session knows it: a lasting fact "
        "or preference of the owner (kind fact: kept in MEMORY.md, shown at the start of "
        "every session) or a note of what happened (kind note: today's notes, found with "
        "memory_search). One short sentence; say why it is worth keeping."
    )

    class Args(ToolArgs):
        text: str = Field(min_length=1, max_length=MAX_ENTRY_CHARS, description="what to keep")
        reason: str = Field(min_length=1, max_length=300, description="why it is worth keeping")
        kind: Literal["fact", "note"] = "fact"

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 10.0
    # Offered in the silent turn before a compaction (core/context/save_before_compaction).
    before_compaction = True

    def __init__(self, book: MemoryBook) -> None:
        self._book = book

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        entry = await self._book.remember(
            a.text,
            reason=a.reason,
            kind=EntryKind(a.kind),
            session=ctx.session,
            event_id=ctx.event_id,
            tainted=ctx.taint.summary() if ctx.taint is not None else None,
        )
        if entry.status is EntryStatus.REVIEW:
            return ToolOutput(
                f"kept for the owner's review as {entry.id}, not in memory: this session has "
                f"read a third party's words ({entry.tainted}), so the owner decides first",
                data={"id": entry.id, "status": entry.status.value},
            )
        return ToolOutput(
            f"remembered as {entry.id} in {entry.file}",
            data={"id": entry.id, "status": entry.status.value},
        )


class MemorySearchTool:
    name = "memory_search"
    description = (
        "Search long-term memory and past conversations (all sessions, every channel) "
        "for words; best matches first, each with its source and date."
    )

    class Args(ToolArgs):
        query: str = Field(min_length=1, max_length=500)
        limit: int = Field(default=8, ge=1, le=30)

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 30.0

    def __init__(self, search: MemorySearch) -> None:
        self._search = search
        if search.meaning is not None:  # only then: the default request stays byte-stable
            self.description = (
                "Search long-term memory and past conversations (all sessions, every channel) "
                "by meaning and by words; best matches first, each with its source and date."
            )

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        found = await self._search.search(a.query, a.limit)
        hits = found.hits
        if not hits:
            nothing = f"nothing in memory or past conversations matches {a.query!r}"
            return ToolOutput("\n".join([nothing, *found.notes]))
        lines = [f"{len(hits)} found for {a.query!r}, best first:", *found.notes]
        for number, hit in enumerate(hits, start=1):
            lines.append(f"{number}. {_where(hit)}: {_shown(hit)}")
        untrusted = sorted({_where(h) for h in hits if not h.trusted})
        return ToolOutput(
            "\n".join(lines),
            untrusted_source=f"memory_search: {', '.join(untrusted)[:300]}" if untrusted else None,
        )


class MemoryGet:
    name = "memory_get"
    description = (
        "Read a memory file whole: MEMORY.md, memory/review.md, or the daily notes of a day "
        "or a range of days (since / until, YYYY-MM-DD)."
    )

    class Args(ToolArgs):
        file: str | None = Field(default=None, description="MEMORY.md or memory/YYYY-MM-DD.md")
        since: str | None = Field(default=None, description="first day, YYYY-MM-DD")
        until: str | None = Field(default=None, description="last day (default: since)")

        @field_validator("since", "until")
        @classmethod
        def _a_day(cls, value: str | None) -> str | None:
            if value is not None:
                try:
                    date.fromisoformat(value)
                except ValueError:
                    raise ValueError("must be a day as YYYY-MM-DD, e.g. 2026-12-03") from None
            return value

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 10.0

    def __init__(self, book: MemoryBook) -> None:
        self._book = book

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        files = self._book.files
        if (a.file is None) == (a.since is None):
            return ToolOutput("give either file or since (and until)", is_error=True)
        if a.file is not None:
            try:
                path = files.path(a.file)
            except MemoryPathError as exc:
                return ToolOutput(str(exc), is_error=True)
            name = str(path.relative_to(files.root))
            text = files.read(name)
            if not text:
                return ToolOutput(f"{name} is empty or not there yet")
            if name == REVIEW_FILE:
                quoted = quote_untrusted("memory entries waiting for review", text, key=name)
                return ToolOutput(quoted, untrusted_source="memory_get memory/review.md")
            return ToolOutput(text)
        first = date.fromisoformat(a.since or "")
        last = date.fromisoformat(a.until) if a.until else first
        if last < first or (last - first).days >= MAX_DAYS:
            return ToolOutput(f"until must be from since to {MAX_DAYS} days after", is_error=True)
        days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
        found = [(day, files.read(day_file(day))) for day in days]
        parts = [f"## {day.isoformat()}\n{text.strip()}" for day, text in found if text.strip()]
        return ToolOutput("\n\n".join(parts) or f"no notes from {first} to {last}")


def _where(hit: Hit) -> str:
    date_part = f", {hit.day}" if hit.day else ""
    return f"{hit.source} ({hit.ref}{date_part})"


def _shown(hit: Hit) -> str:
    if hit.trusted:
        return hit.text
    what = (
        "a memory entry saved while the session had read a third party's words"
        if hit.source == REVIEW_FILE
        else "past conversation not typed by the owner"
    )
    return quote_untrusted(what, hit.text, key=f"{hit.source}:{hit.ref}")
