"""SQLite (WAL) implementation of the store: the embedded default.

One connection, used only from its own thread (``connection_thread``), one
job after another, so transactions never interleave and the event loop never
blocks on disk. ``synchronous=FULL`` by default: a 202 means the event survives a
power cut, not just a process crash.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from wakeful.kernel.events import Event
from wakeful.store.base import (
    AppendResult,
    ConsumeConflict,
    Cursor,
    EventLogPage,
    EventStatus,
    Message,
    ModelCallRecord,
    QueueDepth,
    StoredEvent,
    StoreUnavailable,
)
from wakeful.store.connection_thread import ConnectionThread
from wakeful.store.health import StoreHealth
from wakeful.store.sqlite_schema import (
    SCHEMA,
    SCHEMA_VERSION,
    add_missing_columns,
    check_integrity,
    corrupt,
    is_corruption,
)
from wakeful.store.state.port import StatePort

if TYPE_CHECKING:
    from wakeful.store.fleet.port import Coordination
    from wakeful.store.outbox.port import OutgoingMessages
    from wakeful.store.timers.port import TimerJobStore

T = TypeVar("T")

# The probe's row needs fresh pages, more than a burst of new events would: a disk
# with only the room a failed write left behind in the WAL file still refuses it.
PROBE_BYTES = 256 * 1024

EVENT_COLUMNS = (
    "seq, body, status, strategy, reason, parallel_answer, accepted_at, attempts, failure"
)
# Errors that mean the store cannot serve now (full, I/O, corrupt page, locked);
# others (IntegrityError, ProgrammingError) are our bugs and stay what they are.
STORE_ERRORS = (sqlite3.OperationalError,)


@dataclass
class _Append:
    """One queued ``append``, committed with whatever else is queued at the time."""

    event: Event
    body: str
    status: EventStatus
    strategy: str | None
    reason: str | None
    accepted_at: float
    cursor: Cursor | None = None


def _put_state(conn: sqlite3.Connection, key: str, value: str | None) -> None:
    if value is None:
        conn.execute("DELETE FROM channel_state WHERE key = ?", (key,))
    else:
        conn.execute(
            "INSERT INTO channel_state (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def _row(r: _Append) -> tuple[Any, ...]:
    event = r.event
    return (event.id, event.session, event.kind, r.body, r.status.value, r.strategy, r.reason,
            r.accepted_at)  # fmt: skip


def _created(r: _Append, seq: int) -> AppendResult:
    stored = StoredEvent(seq, r.event, r.status, r.strategy, r.reason, accepted_at=r.accepted_at)
    return AppendResult(stored, True)


def _existing(conn: sqlite3.Connection, event_id: str) -> AppendResult:
    row = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE id = ?", (event_id,)).fetchone()
    return AppendResult(StoredEvent.from_row(row), False)


def _insert_group(conn: sqlite3.Connection, requests: list[_Append]) -> list[AppendResult]:
    """The appends of one transaction, as few statements as possible.

    Every statement the sqlite3 module steps lets go of the GIL and takes it back;
    under webhook load the event loop's thread held it each time, so one INSERT per
    row cost the store's thread a wait (and both threads a forced switch) per row.
    Here a group is one INSERT of all its rows. Rows get consecutive seqs in the
    order of VALUES when none conflicts (AUTOINCREMENT, no other writer inside the
    statement); a group with a duplicate id reads back which of its ids it created.
    An append that carries a channel cursor goes one by one (the cursor is written
    with its event)."""
    if any(r.cursor is not None for r in requests):
        return [_insert_one(conn, r) for r in requests]
    results: list[AppendResult] = []
    for first in range(0, len(requests), ROWS_PER_INSERT):
        chunk = requests[first : first + ROWS_PER_INSERT]
        params = [value for r in chunk for value in _row(r)]
        cursor = conn.execute(_insert_sql(len(chunk)), params)
        made, last = cursor.rowcount, cursor.lastrowid or 0
        if made == len(chunk):
            results += [_created(r, last - made + 1 + i) for i, r in enumerate(chunk)]
            continue
        created = _created_by_last(conn, [r.event.id for r in chunk], made)
        for r in chunk:
            seq = created.pop(r.event.id, None)
            results.append(_created(r, seq) if seq is not None else _existing(conn, r.event.id))
    return results


def _created_by_last(conn: sqlite3.Connection, ids: list[str], made: int) -> dict[str, int]:
    """Which of ``ids`` the last INSERT created (it created ``made`` rows), by seq.

    Not "seq above the last seq minus ``made``": a row that conflicts still uses up a
    seq. But every row it created has a higher seq than any row that was there before,
    so the created ones are the ``made`` highest seqs of the ids' rows."""
    if not made:
        return {}
    unique = list(dict.fromkeys(ids))
    marks = ", ".join("?" * len(unique))
    rows = conn.execute(f"SELECT id, seq FROM events WHERE id IN ({marks})", unique).fetchall()
    newest = sorted(rows, key=lambda row: row[1])[-made:]
    return {str(event_id): int(seq) for event_id, seq in newest}


def _insert_one(conn: sqlite3.Connection, r: _Append) -> AppendResult:
    if r.cursor is not None:
        _put_state(conn, r.cursor.key, r.cursor.value)
    cursor = conn.execute(_insert_sql(1), _row(r))
    if cursor.rowcount == 1:
        return _created(r, cursor.lastrowid or 0)
    return _existing(conn, r.event.id)


# 8 parameters a row: 800 per statement, under SQLite's oldest limit (999).
ROWS_PER_INSERT = 100
_INSERT = (
    "INSERT INTO events (id, session, kind, body, status, strategy, reason, accepted_at)"
    " VALUES {} ON CONFLICT(id) DO NOTHING"
)


@functools.lru_cache(maxsize=ROWS_PER_INSERT)
def _insert_sql(rows: int) -> str:
    return _INSERT.format(",".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * rows))


def _weak_insert_batch(store: SqliteStore) -> Callable[[list[_Append]], list[AppendResult]]:
    ref = weakref.ref(store)

    def commit(requests: list[_Append]) -> list[AppendResult]:
        alive = ref()
        if alive is None:
            raise StoreUnavailable("the event store is closed")
        return alive._insert_batch(requests)

    return commit


def _insert_all(requests: list[_Append]) -> Callable[[sqlite3.Connection], list[AppendResult]]:
    return lambda conn: _insert_group(conn, requests)


class SqliteStore:
    """The Store protocol on one SQLite database file."""

    def __init__(self, path: Path, *, synchronous: Literal["full", "normal"] = "full") -> None:
        self.path = path
        self.health = StoreHealth(f"SQLite file {path}")
        self._synchronous = synchronous
        self._conn: sqlite3.Connection | None = None
        # Every use of the connection, in order, on its own thread; appends grouped there.
        self._thread: ConnectionThread[_Append, AppendResult] | None = None

    async def open(self) -> SqliteStore:
        thread = ConnectionThread(f"sqlite {self.path.name}", _weak_insert_batch(self))
        try:
            await thread.call(self._open_sync)
        except BaseException:
            thread.stop()
            raise
        self._thread = thread
        # A store dropped without aclose (a test's) lets its connection go, as before
        # it had a thread: the thread holds it weakly and ends with it.
        weakref.finalize(self, thread.stop)
        return self

    def _open_sync(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous.upper()}")
            conn.execute("PRAGMA busy_timeout=5000")
            check_integrity(conn, self.path)
            conn.executescript(SCHEMA)
            add_missing_columns(conn)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError) and not is_corruption(exc):
                raise StoreUnavailable(f"cannot open the event store {self.path}: {exc}") from None
            raise corrupt(self.path, str(exc)) from None
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    async def aclose(self) -> None:
        if self._conn is not None and self._thread is not None:
            conn, self._conn = self._conn, None
            thread, self._thread = self._thread, None
            try:
                await thread.call(conn.close)  # after every job queued before it
            finally:
                thread.stop()

    def _connection(self) -> tuple[sqlite3.Connection, ConnectionThread[_Append, AppendResult]]:
        if self._conn is None or self._thread is None:
            raise StoreUnavailable("the event store is closed (the daemon is stopping)")
        return self._conn, self._thread

    # -- the rest of the durable state (StateBackends) -------------------------

    async def outbox_messages(self) -> OutgoingMessages:
        """The table ``outbox`` in this file, on this connection and its one thread."""
        from wakeful.store.outbox.sqlite import SqliteOutbox  # only when asked for

        return await SqliteOutbox(self).open()

    @asynccontextmanager
    async def timer_jobs(self) -> AsyncIterator[TimerJobStore]:
        """The tables ``timer_jobs`` and ``timer_fires`` in this file, on a connection of
        their own (see ``wakeful/store/timers/sqlite.py`` for why)."""
        from wakeful.store.timers.sqlite import SqliteJobStore  # APScheduler: only when used

        jobs = SqliteJobStore(self.path, durable_synchronous=self._synchronous)
        await jobs.open()
        yield jobs

    @asynccontextmanager
    async def coordination(self, name: str) -> AsyncIterator[Coordination | None]:
        """None: one daemon per file, which does every part of the work itself."""
        yield None

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn, thread = self._connection()
        return await thread.call(lambda: self._guarded(conn, fn))

    def _guarded(self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)``, a failing disk reported as StoreUnavailable (and to health)."""
        try:
            return fn(conn)
        except sqlite3.DatabaseError as exc:
            if not isinstance(exc, STORE_ERRORS) and type(exc) is not sqlite3.DatabaseError:
                raise  # IntegrityError and the like: a bug, not the disk
            self.health.failed(str(exc))
            raise StoreUnavailable(f"the event store cannot write: {exc}") from exc

    async def _transaction(
        self, fn: Callable[[sqlite3.Connection], T], *, power_safe: bool = True
    ) -> T:
        """``power_safe=False``: committed without an fsync (WAL, synchronous=NORMAL):
        it survives a crash of the process, not of the machine. For bookkeeping on the
        hot path (crash counts), where a power cut losing the last write is harmless."""
        relaxed = not power_safe and self._synchronous == "full"

        def txn(conn: sqlite3.Connection) -> T:
            if not relaxed:
                return _in_transaction(conn, fn)
            conn.execute("PRAGMA synchronous=NORMAL")
            try:
                return _in_transaction(conn, fn)
            finally:
                conn.execute("PRAGMA synchronous=FULL")

        return await self._run(txn)

    def state(self) -> StatePort:
        from wakeful.store.state.sqlite_state import SqliteState

        return SqliteState(self)

    async def probe_write(self) -> None:
        def txn(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO write_probe VALUES (zeroblob(?))", (PROBE_BYTES,))
            conn.execute("DELETE FROM write_probe")

        await self._transaction(txn)
        self.health.wrote()

    # -- events ---------------------------------------------------------------

    async def append(
        self,
        event: Event,
        status: EventStatus = EventStatus.PENDING,
        strategy: str | None = None,
        reason: str | None = None,
        cursor: Cursor | None = None,
    ) -> AppendResult:
        _, thread = self._connection()
        request = _Append(event, event.to_json(), status, strategy, reason, time.time(), cursor)
        # Concurrent appends share one transaction (one fsync); each returns after it.
        return await thread.append(request)

    def _insert_batch(self, requests: list[_Append]) -> list[AppendResult]:
        """In the connection's thread: the appends queued together, in one transaction."""
        conn = self._conn
        if conn is None:  # closed while they were queued
            raise StoreUnavailable("the event store is closed (the daemon is stopping)")
        return self._guarded(conn, lambda c: _in_transaction(c, _insert_all(requests)))

    # -- channel state ----------------------------------------------------------

    async def get_state(self, key: str) -> str | None:
        row = await self._run(
            lambda conn: conn.execute(
                "SELECT value FROM channel_state WHERE key = ?", (key,)
            ).fetchone()
        )
        return None if row is None else str(row[0])

    async def put_state(self, key: str, value: str | None) -> None:
        await self._transaction(lambda conn: _put_state(conn, key, value))

    async def put_state_if(self, key: str, expected: str | None, value: str | None) -> bool:
        def txn(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT value FROM channel_state WHERE key = ?", (key,)).fetchone()
            if (None if row is None else str(row[0])) != expected:
                return False
            _put_state(conn, key, value)
            return True

        return await self._transaction(txn)

    async def states_under(self, prefix: str) -> dict[str, str]:
        rows = await self._run(
            lambda conn: conn.execute(
                "SELECT key, value FROM channel_state WHERE substr(key, 1, ?) = ?",
                (len(prefix), prefix),
            ).fetchall()
        )
        return {str(key): str(value) for key, value in rows}

    async def set_route(
        self, event_id: str, status: EventStatus, strategy: str, reason: str
    ) -> None:
        await self._transaction(
            lambda conn: conn.execute(
                "UPDATE events SET status = ?, strategy = ?, reason = ?"
                " WHERE id = ? AND status NOT IN ('consumed', 'quarantined')",
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
        fencing: int | None = None,
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
        self,
        session: str,
        messages: list[Message],
        meta: dict[str, Any] | None = None,
        fencing: int | None = None,
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

    async def event_log_newest(
        self, session: str | None, before_seq: int = 0, limit: int = 50
    ) -> EventLogPage:
        where = "seq < ?"
        args: list[object] = [before_seq or 2**62]
        if session is not None:
            where, args = "seq < ? AND session = ?", [*args, session]

        def read(conn: sqlite3.Connection) -> tuple[list[Any], int]:
            rows = conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY seq DESC LIMIT ?",
                (*args, limit),
            ).fetchall()
            (total,) = conn.execute(f"SELECT COUNT(*) FROM events WHERE {where}", args).fetchone()
            return rows, int(total) - len(rows)

        rows, older = await self._run(read)
        return EventLogPage([StoredEvent.from_row(row) for row in reversed(rows)], older)

    async def queue_depths(self) -> list[QueueDepth]:
        rows = await self._run(
            lambda conn: conn.execute(
                "SELECT session, COUNT(*), MIN(accepted_at) FROM events"
                " WHERE status NOT IN ('consumed', 'quarantined') GROUP BY session"
            ).fetchall()
        )
        return [QueueDepth(session, count, oldest) for session, count, oldest in rows]

    # -- crash counting and quarantine ---------------------------------------

    async def note_attempt(self, event_ids: list[str], delta: int = 1) -> dict[str, int]:
        def txn(conn: sqlite3.Connection) -> dict[str, int]:
            marks = ",".join("?" * len(event_ids))
            rows = conn.execute(
                f"SELECT id, attempts FROM events WHERE id IN ({marks})", event_ids
            ).fetchall()
            conn.execute(
                f"UPDATE events SET attempts = MAX(attempts + ?, 0) WHERE id IN ({marks})",
                (delta, *event_ids),
            )
            return {event_id: attempts for event_id, attempts in rows}

        # Counted before every run, so kept off the fsync path: what the count must
        # survive is a crash of the process (a poison event killing it), not a power cut.
        return await self._transaction(txn, power_safe=False) if event_ids else {}

    async def quarantine(self, event_ids: list[str], failure: str) -> list[str]:
        def txn(conn: sqlite3.Connection) -> list[str]:
            marks = ",".join("?" * len(event_ids))
            rows = conn.execute(
                f"SELECT id FROM events WHERE id IN ({marks})"
                " AND status IN ('pending', 'consumed') ORDER BY seq",
                event_ids,
            ).fetchall()
            moved = [event_id for (event_id,) in rows]
            conn.executemany(
                "UPDATE events SET status = 'quarantined', failure = ? WHERE id = ?",
                [(failure, event_id) for event_id in moved],
            )
            return moved

        return await self._transaction(txn) if event_ids else []

    async def retry(self, event_id: str) -> StoredEvent | None:
        def txn(conn: sqlite3.Connection) -> StoredEvent | None:
            cursor = conn.execute(
                "UPDATE events SET status = 'pending', attempts = 0"
                " WHERE id = ? AND status = 'quarantined'",
                (event_id,),
            )
            if cursor.rowcount != 1:
                return None
            row = conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE id = ?", (event_id,)
            ).fetchone()
            return StoredEvent.from_row(row)

        return await self._transaction(txn)

    async def quarantined(self) -> list[StoredEvent]:
        rows = await self._run(
            lambda conn: conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE status = 'quarantined' ORDER BY seq"
            ).fetchall()
        )
        return [StoredEvent.from_row(row) for row in rows]

    # -- model calls ----------------------------------------------------------

    async def record_model_call(self, record: ModelCallRecord) -> None:
        now = record.created_at or time.time()
        await self._transaction(
            lambda conn: conn.execute(
                "INSERT INTO model_calls (session, run_id, model, latency_s, prompt_tokens,"
                " completion_tokens, cached_tokens, finish_reason, outcome, created_at, source)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    record.source,
                ),
            )
        )

    async def model_calls(self, session: str, limit: int = 100) -> list[ModelCallRecord]:
        rows = await self._run(
            lambda conn: conn.execute(
                "SELECT session, run_id, model, latency_s, prompt_tokens, completion_tokens,"
                " cached_tokens, finish_reason, outcome, source, created_at FROM model_calls"
                " WHERE session = ? ORDER BY seq DESC LIMIT ?",
                (session, limit),
            ).fetchall()
        )
        return [ModelCallRecord(*row) for row in reversed(rows)]


def _in_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
    except BaseException:
        # SQLite may have rolled back already (SQLITE_FULL, I/O errors do);
        # a second ROLLBACK would hide the real error behind its own.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


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
