"""What remembering does: file the entry where its trust says (MEMORY.md, a day's
notes, or review.md when the session was tainted), keep its provenance, and move or
take it out when the owner decides. The one place that decides an entry's trust."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import anyio

from wakeful.memory.entries import Entry, EntryKind, EntryLog, EntryStatus, new_entry_id
from wakeful.memory.files import MEMORY_FILE, REVIEW_FILE, MemoryFiles, day_file, entry_line


class EntryNotFound(LookupError):
    """No entry of that id; the message says how to list them."""


class MemoryBook:
    def __init__(self, files: MemoryFiles, entries: EntryLog, zone: ZoneInfo) -> None:
        self.files = files
        self.entries = entries
        self._zone = zone
        self._lock = anyio.Lock()  # one writer of the files at a time

    def home(self, kind: EntryKind, when: datetime) -> str:
        """Where a trusted entry of ``kind`` lives: facts in MEMORY.md, notes by day."""
        return (
            MEMORY_FILE if kind is EntryKind.FACT else day_file(when.astimezone(self._zone).date())
        )

    async def remember(
        self,
        text: str,
        *,
        reason: str,
        kind: EntryKind,
        session: str,
        event_id: str | None,
        tainted: str | None,
    ) -> Entry:
        now = datetime.now(UTC)
        # Written while a third party's words were in the session: the words may be that
        # party's wish (a "remember to always Bcc …"), so they wait for the owner.
        file = REVIEW_FILE if tainted is not None else self.home(kind, now)
        entry = Entry(
            id=new_entry_id(),
            kind=kind,
            text=" ".join(text.split()),
            reason=" ".join(reason.split()),
            session=session,
            event_id=event_id,
            tainted=tainted,
            status=EntryStatus.REVIEW if tainted is not None else EntryStatus.KEPT,
            file=file,
            created_at=now.isoformat(timespec="seconds"),
        )
        async with self._lock:
            await self.entries.put(entry)  # first: a line never lacks its provenance
            await anyio.to_thread.run_sync(
                self.files.append, file, entry_line(entry.text, entry.id)
            )
        return entry

    async def get(self, entry_id: str) -> Entry:
        entry = await self.entries.get(entry_id)
        if entry is None:
            raise EntryNotFound(f"no memory entry {entry_id!r}: `wakeful memory list` shows them")
        return entry

    async def approve(self, entry_id: str) -> Entry:
        """The owner vouches for an entry waiting in review: into memory, trusted."""
        async with self._lock:
            entry = await self.get(entry_id)
            if entry.status is not EntryStatus.REVIEW:
                return entry  # approving twice, or an entry never in review: nothing to do
            now = datetime.now(UTC)
            home = self.home(entry.kind, now)
            line = entry_line(entry.text, entry.id)
            await anyio.to_thread.run_sync(self.files.append, home, line)
            await anyio.to_thread.run_sync(self.files.remove, REVIEW_FILE, entry.id)
            decided = entry.decided(EntryStatus.APPROVED, home, now.isoformat(timespec="seconds"))
            await self.entries.put(decided)
            return decided

    async def forget(self, entry_id: str) -> Entry:
        """Out of every file; the record stays, marked forgotten."""
        async with self._lock:
            entry = await self.get(entry_id)
            if entry.status is EntryStatus.FORGOTTEN:
                return entry
            await anyio.to_thread.run_sync(self.files.remove, entry.file, entry.id)
            now = datetime.now(UTC).isoformat(timespec="seconds")
            decided = entry.decided(EntryStatus.FORGOTTEN, entry.file, now)
            await self.entries.put(decided)
            return decided

    def digest(self, max_chars: int) -> str:
        """The system prompt's memory section: MEMORY.md's lines up to ``max_chars``
        (review.md never), or nothing while MEMORY.md says nothing."""
        lines = [line.text for line in self.files.lines(MEMORY_FILE)]
        if not lines or max_chars <= 0:
            return ""
        head = (
            "## Memory\nWhat you were asked to remember (MEMORY.md; the owner may edit it). "
            "Save lasting facts and preferences with remember; find older notes and past "
            "conversations with memory_search.\n"
        )
        if len(head) >= max_chars:
            return ""
        shown: list[str] = []
        used = len(head)
        for number, text in enumerate(lines):
            left_after = len(lines) - number - 1
            need = len(text) + 1 + (len(_more(left_after)) + 1 if left_after else 0)
            if used + need > max_chars:
                if used + len(_more(left_after + 1)) <= max_chars:
                    shown.append(_more(left_after + 1))
                break
            shown.append(text)
            used += len(text) + 1
        return head + "\n".join(shown)


def _more(count: int) -> str:
    return f"(… {count} more lines: memory_get {MEMORY_FILE})"
