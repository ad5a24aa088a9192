"""SQLite (WAL) implementation of the store: the embedded default.

One connection, used from one worker thread at a time (a capacity limiter of
one), so transactions never interleave and the event loop never blocks on
disk. ``synchronous=FULL`` by default: a 202 means the event survives a
power cut, not just a process crash.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread

from wakeful.daemon.store.base import (
    AppendResult,
    ConsumeConflict,
    EventStatus,
    Message,
    ModelCallRecord,
    QueueDepth,
    StoredEvent,
    StoreUnavailable,
)
from wakeful.daemon.store.group_commit import GroupCommit
from wakeful.events import Event

T = TypeVar("T")

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    strategy TEXT,
    reason TEXT,
    parallel_answer TEXT,
    accepted_at REAL NOT NULL,
    consumed_at REAL
);
CREATE INDEX IF NOT EXISTS events_by_session_status ON events(session, status, seq);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    body TEXT NOT NULL,
    meta TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session, seq);
CREATE TABLE IF NOT EXISTS model_calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    run_id TEXT NOT NULL,
    model TEXT NOT NULL,
    latency_s REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    outcome TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS model_calls_by_session ON model_calls(session, seq);
"""

EVENT_COLUMNS = "seq, body, status, strategy, reason, parallel_answer, accepted_at"


@dataclass
class _Append:
    """One queued ``append``, committed with whatever else is queued at the time."""

    event: Event
    body: str
    status: EventStatus
    strategy: str | None
    reason: str | None
    accepted_at: float


def _insert(conn: sqlite3.Connection, r: _Append) -> AppendResult:
    event, status = r.event, r.status
    cursor = conn.execute(
        "INSERT INTO events (id, session, kind, body, status, strategy, reason,"
        " accepted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
        (event.id, event.session, event.kind, r.body, status.value, r.strategy, r.reason,
         r.accepted_at),
    )  # fmt: skip
    if cursor.rowcount == 1:
        seq = cursor.lastrowid or 0
        stored = StoredEvent(seq, event, status, r.strategy, r.reason, accepted_at=r.accepted_at)
        return AppendResult(stored, True)
    row = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE id = ?", (event.id,)).fetchone()
    return AppendResult(StoredEvent.from_row(row), False)


class SqliteStore:
    """The Store protocol on one SQLite database file."""

    def __init__(self, path: Path, *, synchronous: Literal["full", "normal"] = "full") -> None:
        self.path = path
        self._synchronous = synchronous
        self._conn: sqlite3.Connection | None = None
        self._limiter = anyio.CapacityLimiter(1)
        self._appends: GroupCommit[_Append, AppendResult] = GroupCommit(self._insert_batch)

    async def open(self) -> SqliteStore:
        await anyio.to_thread.run_sync(self._open_sync, limiter=self._limiter)
        return self

    def _open_sync(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous.upper()}")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.executescript(SCHEMA)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self._conn = conn

    async def aclose(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await anyio.to_thread.run_sync(conn.close, limiter=self._limiter)

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn
        if conn is None:
            raise StoreUnavailable("the event store is closed (the daemon is stopping)")

        def call() -> T:
            try:
                return fn(conn)
            except sqlite3.OperationalError as exc:
                raise StoreUnavailable(f"the event store cannot write: {exc}") from exc

        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    async def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def txn(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

        return await self._run(txn)

    # -- events ---------------------------------------------------------------

    async def append(
        self,
        event: Event,
        status: EventStatus = EventStatus.PENDING,
        strategy: str | None = None,
        reason: str | None = None,
    ) -> AppendResult:
        request = _Append(event, event.to_json(), status, strategy, reason, time.time())
        # Concurrent appends share one transaction (one fsync); each returns after it.
        return await self._appends.submit(request)

    async def _insert_batch(self, requests: list[_Append]) -> list[AppendResult]:
        return await self._transaction(lambda conn: [_insert(conn, r) for r in requests])

    async def set_route(
        self, event_id: str, status: EventStatus, strategy: str, reason: str
    ) -> None:
        await self._transaction(
            lambda conn: conn.execute(
                "UPDATE events SET status = ?, strategy = ?, reason = ?"
                " WHERE id = ? AND status != 'consumed'",
                (status.value, strategy, reason, event_id),
            )
        )

    async def set_parallel_answer(self, event_id: str, answer: str) -> None:
        await self._transaction(
            lambda conn: conn.execute(
                "UPDATE events SET status = 'pending', parallel_answer = ?"
                " WHERE id = ? AND status = 'parallel'",
                (answer, event_id),
            )
        )

    async def pending(self, session: str) -> list[StoredEvent]:
        rows = await self._run(
            lambda conn: conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events"
                " WHERE session = ? AND status = 'pending' ORDER BY seq",
                (session,),
            ).fetchall()
        )
        return [StoredEvent.from_row(row) for row in rows]

    async def consume(
        self,
        session: str,
        event_ids: list[str],
        messages: list[Message],
        meta: dict[str, Any] | None = None,
    ) -> None:
        now = time.time()

        def txn(conn: sqlite3.Connection) -> None:
            marks = ",".join("?" * len(event_ids))
            cursor = conn.execute(
                f"UPDATE events SET status = 'consumed', consumed_at = ?"
                f" WHERE session = ? AND status = 'pending' AND id IN ({marks})",
                (now, session, *event_ids),
            )
            if cursor.rowcount != len(event_ids):
                raise ConsumeConflict(
                    f"{len(event_ids) - cursor.rowcount} of {len(event_ids)} events"
                    f" in session {session!r} were no longer pending"
                )
            _insert_messages(conn, session, messages, meta, now)

        await self._transaction(txn)

    async def append_messages(
        self, session: str, messages: list[Message], meta: dict[str, Any] | None = None
    ) -> None:
        now = time.time()
        await self._transaction(lambda conn: _insert_messages(conn, session, messages, meta, now))

    async def trajectory(self, session: str) -> list[Message]:
        rows = await self._run(
            lambda conn: conn.execute(
                "SELECT body FROM messages WHERE session = ? ORDER BY seq", (session,)
            ).fetchall()
        )
        return [json.loads(body) for (body,) in rows]

    async def sessions(self) -> list[str]:
        rows = await self._run(
            lambda conn: conn.execute(
                "SELECT session FROM events UNION SELECT session FROM messages"
            ).fetchall()
        )
        return sorted(session for (session,) in rows)

    async def recover(self) -> int:
        def txn(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "UPDATE events SET status = 'pending' WHERE status IN ('routing', 'parallel')"
            )
            return cursor.rowcount

        return await self._transaction(txn)

    async def event_log(
        self, session: str | None, after_seq: int = 0, limit: int = 200
    ) -> list[StoredEvent]:
        where, args = "seq > ?", [after_seq]
        args_t: list[object] = list(args)
        if session is not None:
            where, args_t = "seq > ? AND session = ?", [after_seq, session]
        rows = await self._run(
            lambda conn: conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY seq LIMIT ?",
                (*args_t, limit),
            ).fetchall()
        )
        return [StoredEvent.from_row(row) for row in rows]

    async def queue_depths(self) -> list[QueueDepth]:
        rows = await self._run(
            lambda conn: conn.execute(
                "SELECT session, COUNT(*), MIN(accepted_at) FROM events"
                " WHERE status != 'consumed' GROUP BY session"
            ).fetchall()
        )
        return [QueueDepth(session, count, oldest) for session, count, oldest in rows]

    # -- model calls ----------------------------------------------------------

    async def record_model_call(self, record: ModelCallRecord) -> None:
        now = time.time()
        await self._transaction(
            lambda conn: conn.execute(
                "INSERT INTO model_calls (session, run_id, model, latency_s, prompt_tokens,"
                " completion_tokens, cached_tokens, finish_reason, outcome, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.session,
                    record.run_id,
                    record.model,
                    record.latency_s,
                    record.prompt_tokens,
                    record.completion_tokens,
                    record.cached_tokens,
                    record.finish_reason,
                    record.outcome,
                    now,
                ),
            )
        )

    async def model_calls(self, session: str, limit: int = 100) -> list[ModelCallRecord]:
        rows = await self._run(
            lambda conn: conn.execute(
                "SELECT session, run_id, model, latency_s, prompt_tokens, completion_tokens,"
                " cached_tokens, finish_reason, outcome FROM model_calls"
                " WHERE session = ? ORDER BY seq DESC LIMIT ?",
                (session, limit),
            ).fetchall()
        )
        return [ModelCallRecord(*row) for row in reversed(rows)]


def _insert_messages(
    conn: sqlite3.Connection,
    session: str,
    messages: list[Message],
    meta: dict[str, Any] | None,
    now: float,
) -> None:
    meta_json = json.dumps(meta) if meta else None
    conn.executemany(
        "INSERT INTO messages (session, body, meta, created_at) VALUES (?, ?, ?, ?)",
        [(session, json.dumps(m, ensure_ascii=False), meta_json, now) for m in messages],
    )
