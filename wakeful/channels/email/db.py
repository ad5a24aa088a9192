"""The email channel's durable state, in its own tables of the daemon's SQLite file.

``email_cursor`` holds (account, mailbox) → (UIDVALIDITY, last UID): it is
advanced only after the message's event is committed, so a crash re-fetches
at most the last message, whose event id the store deduplicates.
``email_seen`` remembers delivered Message-IDs per mailbox so that a
UIDVALIDITY change (all UIDs renumbered) resyncs without duplicates.
The drafts of ``draft_email`` are kept here too (``email_outbox``, its name from
when e-mail had an outbox of its own; its ``state`` column is set only on rows
that outbox wrote — new drafts are sent through the shared outbox). This is the SQLite
backend of :class:`~wakeful.channels.email.state_port.MailState`; with
``[store] backend = "redis"`` the state is in Redis (``redis_state.py``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio

from wakeful.channels.email.draft_record import Draft, legacy_state
from wakeful.core.outbox.states import DeliveryState

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS email_cursor (
    account TEXT NOT NULL, mailbox TEXT NOT NULL,
    uidvalidity INTEGER NOT NULL, last_uid INTEGER NOT NULL,
    resync_below INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (account, mailbox));
CREATE TABLE IF NOT EXISTS email_seen (
    account TEXT NOT NULL, mailbox TEXT NOT NULL, message_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (account, mailbox, message_id));
CREATE TABLE IF NOT EXISTS email_outbox (
    message_id TEXT PRIMARY KEY, draft_id TEXT NOT NULL UNIQUE, account TEXT NOT NULL,
    state TEXT NOT NULL, recipients TEXT NOT NULL, raw BLOB NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, detail TEXT NOT NULL DEFAULT '');
"""


@dataclass(frozen=True)
class Cursor:
    uidvalidity: int
    last_uid: int
    # After a UIDVALIDITY change, messages below this UID may have been delivered
    # under their old UIDs: they are deduplicated on Message-ID.
    resync_below: int = 0


class CursorStore(Protocol):
    """Where a mailbox watcher keeps its cursor: :class:`MailDb` for the configured
    mailboxes, the subscription's state for a connect_channel mailbox."""

    async def cursor(self, account: str, mailbox: str) -> Cursor | None: ...

    async def set_cursor(self, account: str, mailbox: str, cursor: Cursor) -> None: ...

    async def advance(
        self, account: str, mailbox: str, cursor: Cursor, message_id: str, event_id: str
    ) -> None: ...

    async def seen(self, account: str, mailbox: str, message_id: str) -> str | None: ...


class MailDb:
    """One sqlite3 connection used from worker threads, one statement group at a time."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.close)

    def _tx(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return result

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._tx, work)

    # --- the inbound cursor ------------------------------------------------

    async def cursor(self, account: str, mailbox: str) -> Cursor | None:
        def read(conn: sqlite3.Connection) -> Cursor | None:
            row = conn.execute(
                "SELECT uidvalidity, last_uid, resync_below FROM email_cursor "
                "WHERE account=? AND mailbox=?",
                (account, mailbox),
            ).fetchone()
            return Cursor(row[0], row[1], row[2]) if row else None

        return await self.run(read)

    async def set_cursor(self, account: str, mailbox: str, cursor: Cursor) -> None:
        await self.run(lambda conn: _upsert_cursor(conn, account, mailbox, cursor))

    async def advance(
        self, account: str, mailbox: str, cursor: Cursor, message_id: str, event_id: str
    ) -> None:
        """Record one delivered (or deliberately skipped) message, atomically."""

        def write(conn: sqlite3.Connection) -> None:
            _upsert_cursor(conn, account, mailbox, cursor)
            if message_id:
                conn.execute(
                    "INSERT OR IGNORE INTO email_seen VALUES (?, ?, ?, ?)",
                    (account, mailbox, message_id, event_id),
                )

        await self.run(write)

    async def seen(self, account: str, mailbox: str, message_id: str) -> str | None:
        """The event id a message with this Message-ID was delivered as, if any."""

        def read(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT event_id FROM email_seen WHERE account=? AND mailbox=? AND message_id=?",
                (account, mailbox, message_id),
            ).fetchone()
            return str(row[0]) if row else None

        return await self.run(read)

    async def fetch_all(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return await self.run(lambda conn: conn.execute(sql, params).fetchall())

    # --- the drafts --------------------------------------------------------

    async def add_draft(self, row: Draft, now: float) -> None:
        values = (row.message_id, row.draft_id, row.account, row.stored_state,
                  json.dumps(row.recipients), row.raw, row.legacy_detail, now, now)  # fmt: skip
        await self.run(
            lambda conn: conn.execute(
                f"INSERT INTO email_outbox ({_COLUMNS}, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
        )

    async def draft(self, draft_or_message_id: str) -> Draft | None:
        rows = await self.fetch_all(
            f"SELECT {_COLUMNS} FROM email_outbox WHERE draft_id=? OR message_id=?",
            (draft_or_message_id, draft_or_message_id),
        )
        return _draft(rows[0]) if rows else None

    async def drafts(self) -> list[Draft]:
        return [_draft(row) for row in await self.fetch_all(f"SELECT {_COLUMNS} FROM email_outbox")]

    async def settle_legacy(self, message_id: str, new: DeliveryState, detail: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE email_outbox SET state=?, detail=?, updated_at=? "
                "WHERE message_id=? AND state='sending'",
                (new.value, detail, time.time(), message_id),
            )
            return cur.rowcount == 1

        return await self.run(write)


_COLUMNS = "message_id, draft_id, account, state, recipients, raw, detail"


def _draft(values: tuple[object, ...]) -> Draft:
    message_id, draft_id, account, state, recipients, raw, detail = values
    return Draft(
        str(message_id),
        str(draft_id),
        str(account),
        list(json.loads(str(recipients))),
        bytes(raw) if isinstance(raw, bytes | bytearray | memoryview) else b"",
        legacy_state(str(state)),
        str(detail),
    )


def _upsert_cursor(conn: sqlite3.Connection, account: str, mailbox: str, cursor: Cursor) -> None:
    conn.execute(
        "INSERT INTO email_cursor VALUES (?, ?, ?, ?, ?) ON CONFLICT (account, mailbox) "
        "DO UPDATE SET uidvalidity=excluded.uidvalidity, last_uid=excluded.last_uid, "
        "resync_below=excluded.resync_below",
        (account, mailbox, cursor.uidvalidity, cursor.last_uid, cursor.resync_below),
    )
