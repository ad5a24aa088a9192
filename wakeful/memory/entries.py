"""Each entry's provenance, kept in the store beside the files: who wrote it, in which
session, answering which event, whether the session was tainted, and what the owner
decided. ``wakeful memory list | show | approve | forget`` reads and changes these."""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any

from wakeful.store.base import ChannelState

KEY_PREFIX = "memory:entry:"


class EntryStatus(StrEnum):
    KEPT = "kept"  # in MEMORY.md or a day's notes: the agent's own, trusted
    REVIEW = "review"  # written while tainted: waits in review.md for the owner
    APPROVED = "approved"  # the owner moved it from review into memory
    FORGOTTEN = "forgotten"  # taken out of every file; the record stays as the audit trail


class EntryKind(StrEnum):
    FACT = "fact"  # MEMORY.md: durable, shown in the digest
    NOTE = "note"  # memory/YYYY-MM-DD.md: what happened, found by search


@dataclass(frozen=True)
class Entry:
    id: str
    kind: EntryKind
    text: str
    reason: str
    session: str
    event_id: str | None
    tainted: str | None  # what had tainted the session when it was written
    status: EntryStatus
    file: str  # where its line is (relative to the memory folder)
    created_at: str
    decided_at: str | None = None
    by: str = "agent"

    def public(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def parse(cls, raw: str) -> Entry:
        data = json.loads(raw)
        data["kind"], data["status"] = EntryKind(data["kind"]), EntryStatus(data["status"])
        return cls(**data)

    def decided(self, status: EntryStatus, file: str, at: str) -> Entry:
        return replace(self, status=status, file=file, decided_at=at)


def new_entry_id() -> str:
    return f"mem-{secrets.token_hex(4)}"


class EntryLog:
    def __init__(self, state: ChannelState) -> None:
        self._state = state

    async def put(self, entry: Entry) -> None:
        await self._state.put_state(KEY_PREFIX + entry.id, json.dumps(entry.public()))

    async def get(self, entry_id: str) -> Entry | None:
        raw = await self._state.get_state(KEY_PREFIX + entry_id)
        return Entry.parse(raw) if raw is not None else None

    async def all(self) -> list[Entry]:
        """Newest first."""
        found = [Entry.parse(raw) for raw in (await self._state.states_under(KEY_PREFIX)).values()]
        return sorted(found, key=lambda e: e.created_at, reverse=True)
