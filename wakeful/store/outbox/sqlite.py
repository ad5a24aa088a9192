"""The outbox in its own table of the daemon's SQLite file (``[store] backend = "sqlite"``).

Every call runs on the store's one connection and worker thread, so outbox
writes and event writes never interleave.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from wakeful.store.outbox.record import (
    LOCAL_CHAT,
    NewMessage,
    OutgoingMessage,
    approval_of_old_record,
)
from wakeful.store.outbox.states import (
    RESENT_AFTER_STOP,
    STOPPED_MID_SEND,
    DeliveryState,
    check_move,
)

if TYPE_CHECKING:  # the store hands this backend out: it imports this module
    from wakeful.store.sqlite import SqliteStore

PENDING = DeliveryState.PENDING

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    channel TEXT NOT NULL,
    text TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    answers TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    acked_at REAL,
    address TEXT,
    approval TEXT
);
CREATE INDEX IF NOT EXISTS outbox_by_state ON outbox(state, id);
CREATE INDEX IF NOT EXISTS outbox_unread ON outbox(session, channel, acked_at, id);
"""
COLUMNS = (
    "id, session, channel, text, key, state, attempts, last_error, created_at, updated_at,"
    " answers, acked_at, address, approval"
)
# Columns added after the first release, for files written by an older daemon.
# A row from before ``approval`` gets NULL there; a newer row stores '' for "not a notice".
ADDED_COLUMNS = {"address": "address TEXT", "approval": "approval TEXT"}


def _record(row: tuple[Any, ...]) -> OutgoingMessage:
    (id_, session, channel, text, key, state, attempts, error, created, updated, answers,
     acked, address, approval) = row  # fmt: skip
    return OutgoingMessage(
        int(id_), session, channel, text, key, DeliveryState.parse(state), int(attempts),
        error, float(created), float(updated), answers, acked, address,
        approval_of_old_record(key) if approval is None else approval or None,
    )  # fmt: skip


def _create(conn: sqlite3.Connection) -> None:
    conn.executescript(SCHEMA)
    present = {row[1] for row in conn.execute("PRAGMA table_info(outbox)")}
    # The unread index once lacked the channel (platform replies are never acknowledged).
    if "address" not in present:
        conn.execute("DROP INDEX IF EXISTS outbox_unread")
        conn.execute("CREATE INDEX outbox_unread ON outbox(session, channel, acked_at, id)")
    for name, definition in ADDED_COLUMNS.items():
        if name not in present:
            conn.execute(f"ALTER TABLE outbox ADD COLUMN {definition}")


class SqliteOutbox:
    """``OutgoingMessages`` on the table ``outbox`` next to the event store's tables."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def open(self) -> SqliteOutbox:
        await self._run(_create)
        return self

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._store._run(fn)

    async def _select(self, where: str, args: tuple[Any, ...]) -> list[OutgoingMessage]:
        sql = f"SELECT {COLUMNS} FROM outbox WHERE {where}"
        rows = await self._run(lambda conn: conn.execute(sql, args).fetchall())
        return [_record(row) for row in rows]

    async def add(self, message: NewMessage) -> OutgoingMessage:
        return (await self._insert(message, DeliveryState.PENDING))[0]

    async def add_claimed(self, message: NewMessage) -> tuple[OutgoingMessage, bool]:
        return await self._insert(message, DeliveryState.SENDING)

    async def _insert(
        self, message: NewMessage, state: DeliveryState
    ) -> tuple[OutgoingMessage, bool]:
        m, now, attempts = message, time.time(), int(state is DeliveryState.SENDING)

        def insert(conn: sqlite3.Connection) -> tuple[tuple[Any, ...], bool]:
            cursor = conn.execute(
                "INSERT INTO outbox (key, session, channel, text, state, attempts, answers,"
                " created_at, updated_at, address, approval)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(key) DO NOTHING",
                (m.key, m.session, m.channel, m.text, state.value, attempts, m.answers, now,
                 now, m.address, m.approval or ""),
            )  # fmt: skip
            row = conn.execute(f"SELECT {COLUMNS} FROM outbox WHERE key = ?", (m.key,))
            return row.fetchone(), cursor.rowcount == 1

        row, created = await self._run(insert)
        return _record(row), created

    async def get(self, message_id: int) -> OutgoingMessage | None:
        found = await self._select("id = ?", (message_id,))
        return found[0] if found else None

    async def pending(self, limit: int = 100) -> list[OutgoingMessage]:
        return await self._select("state = ? ORDER BY id LIMIT ?", ("pending", limit))

    async def move(
        self, message_id: int, old: DeliveryState, new: DeliveryState, *, error: str = ""
    ) -> OutgoingMessage | None:
        check_move(old, new)
        attempt = 1 if new is DeliveryState.SENDING else 0

        def update(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            cursor = conn.execute(
                "UPDATE outbox SET state = ?, attempts = attempts + ?, last_error = ?,"
                " updated_at = ? WHERE id = ? AND state = ?",
                (new.value, attempt, error[:1000], time.time(), message_id, old.value),
            )
            if cursor.rowcount != 1:
                return None
            row: tuple[Any, ...] = conn.execute(
                f"SELECT {COLUMNS} FROM outbox WHERE id = ?", (message_id,)
            ).fetchone()
            return row

        row = await self._run(update)
        return None if row is None else _record(row)

    async def mark_interrupted(self, resend: Collection[str] = ()) -> list[OutgoingMessage]:
        left = await self._select("state = ? ORDER BY id", ("sending",))
        moved = [
            await self.move(m.id, m.state, PENDING, error=RESENT_AFTER_STOP)
            if m.channel in resend
            else await self.move(m.id, m.state, DeliveryState.UNKNOWN, error=STOPPED_MID_SEND)
            for m in left
        ]
        return [m for m in moved if m is not None]

    async def watch_claims(
        self, resend: Collection[str], settled: Callable[[list[OutgoingMessage]], None]
    ) -> None:
        return  # one daemon per SQLite file: its claims are all its own

    async def unread(self, session: str) -> list[OutgoingMessage]:
        return await self._select(
            "session = ? AND channel = ? AND acked_at IS NULL ORDER BY id", (session, LOCAL_CHAT)
        )

    async def acknowledge(
        self, session: str, *, up_to: int | None = None, ids: tuple[int, ...] = ()
    ) -> int:
        now = time.time()
        marks = ", ".join("?" * len(ids)) or "NULL"
        limit = -1 if up_to is None else up_to

        def update(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "UPDATE outbox SET acked_at = ? WHERE session = ? AND acked_at IS NULL"
                f" AND (id <= ? OR id IN ({marks}))",
                (now, session, limit, *ids),
            )
            return cursor.rowcount

        return await self._run(update)

    async def latest(self, session: str) -> OutgoingMessage | None:
        found = await self._select("session = ? ORDER BY id DESC LIMIT 1", (session,))
        return found[0] if found else None

    async def history(
        self, session: str, *, after: int = 0, limit: int = 200
    ) -> list[OutgoingMessage]:
        return await self._select(
            "session = ? AND id > ? ORDER BY id LIMIT ?", (session, after, limit)
        )
