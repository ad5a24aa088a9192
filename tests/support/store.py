"""The core's store in tests: the real SQLite store, telling the test when it wrote.

A test waits for what the core did by re-checking a condition each time
something observable moved (tests/support/changes.py). Some steps leave their
only trace in the store — an event recorded as not handled by a closed session,
a quarantine, a parallel answer put back in the queue — so each write here
pings too. Nothing else differs from the daemon's store: same class, same file,
same schema; only the ping is added, after the write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.changes import Changes
from wakeful.kernel.events import Event
from wakeful.store.base import AppendResult, Cursor, EventStatus, Message
from wakeful.store.sqlite import SqliteStore

STORE_FILE = "wakeful.db"  # where wakeful.store.factory puts the SQLite store


class ObservedStore(SqliteStore):
    def __init__(self, data_dir: Path, changes: Changes) -> None:
        # normal: no fsync per commit (a process crash still loses nothing).
        super().__init__(data_dir / STORE_FILE, synchronous="normal")
        self._changes = changes

    async def append(
        self,
        event: Event,
        status: EventStatus = EventStatus.PENDING,
        strategy: str | None = None,
        reason: str | None = None,
        cursor: Cursor | None = None,
    ) -> AppendResult:
        try:
            return await super().append(event, status, strategy, reason, cursor)
        finally:
            self._changes.ping()

    async def set_route(
        self, event_id: str, status: EventStatus, strategy: str, reason: str
    ) -> None:
        try:
            await super().set_route(event_id, status, strategy, reason)
        finally:
            self._changes.ping()

    async def set_parallel_answer(self, event_id: str, answer: str) -> None:
        try:
            await super().set_parallel_answer(event_id, answer)
        finally:
            self._changes.ping()

    async def consume(
        self,
        session: str,
        event_ids: list[str],
        messages: list[Message],
        meta: dict[str, Any] | None = None,
        fencing: int | None = None,
    ) -> None:
        try:
            await super().consume(session, event_ids, messages, meta, fencing)
        finally:
            self._changes.ping()

    async def append_messages(
        self,
        session: str,
        messages: list[Message],
        meta: dict[str, Any] | None = None,
        fencing: int | None = None,
    ) -> None:
        try:
            await super().append_messages(session, messages, meta, fencing)
        finally:
            self._changes.ping()

    async def quarantine(self, event_ids: list[str], failure: str) -> list[str]:
        try:
            return await super().quarantine(event_ids, failure)
        finally:
            self._changes.ping()
