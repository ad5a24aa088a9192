"""APScheduler's jobs, kept in the daemon's SQLite database (write-behind).

APScheduler 3 calls its job store synchronously on the event loop, so the
jobs live in memory (``MemoryJobStore``) and every change is queued, in
order, to one writer task that commits batches from a worker thread: the
loop never waits on disk or on the event store's write lock.

The ``timer_fires`` table makes a fire survive a crash. APScheduler
advances a job (or deletes a one-shot) right after handing the run to the
executor, before the event is committed; the executor therefore records the
run here first, in the same ordered queue, and clears it only after the
``timer.trigger`` event is committed. A run still listed at start-up is
fired again; its deterministic event id makes a repeat a no-op.

Commits use ``synchronous=NORMAL``: in WAL mode they are appended in order
without an fsync of their own (the event store's next FULL commit syncs
them too), so a fire costs the disk one fsync — the event's — not three.
A power cut can lose only the newest job changes, in order; a lost advance
re-fires a run that deduplicates. ``flush(durable=True)``, used before a
tool promises "timer set", commits with ``FULL``.

While a fire is committing its event the writer holds back (up to a
second): two connections taking SQLite's write lock at once make one sleep
in SQLite's busy handler for milliseconds, and the event is what is late.
"""

from __future__ import annotations

import json
import math
import pickle
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import structlog
from apscheduler.job import Job
from apscheduler.util import datetime_to_utc_timestamp

from wakeful.store.timers.port import PendingFire
from wakeful.store.timers.restoring import RestoringJobStore, take_queued

log = structlog.get_logger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS timer_jobs (
    id TEXT PRIMARY KEY,
    next_run_time REAL,
    state BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS timer_fires (
    job_id TEXT NOT NULL,
    run_time TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (job_id, run_time)
);
"""

# One queued change: (SQL, parameters) or a barrier set once all before it are committed.
_Statement = tuple[str, tuple[Any, ...]]


@dataclass(frozen=True)
class _Barrier:
    done: anyio.Event
    durable: bool


_Write = _Statement | _Barrier
_FIRE_PRIORITY_S = 1.0  # longest the writer waits for fires to commit their events


class SqliteJobStore(RestoringJobStore):
    def __init__(self, path: Path, *, durable_synchronous: str = "full") -> None:
        super().__init__()
        self._path = path
        self._durable_synchronous = durable_synchronous.upper()
        self._conn: sqlite3.Connection | None = None
        self._send, self._receive = anyio.create_memory_object_stream[_Write](math.inf)
        self._fires_in_flight = 0
        self._no_fires = anyio.Event()
        self.pending_fires: list[PendingFire] = []

    # -- lifecycle --------------------------------------------------------------

    async def open(self) -> None:
        """Read the stored jobs and unfinished fires (before the scheduler starts)."""
        self._conn = await anyio.to_thread.run_sync(self._connect)
        self._loaded, self.pending_fires = await anyio.to_thread.run_sync(self._read_all)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.executescript(SCHEMA)
        return conn

    def _read_all(self) -> tuple[list[bytes], list[PendingFire]]:
        assert self._conn is not None
        states = [row[0] for row in self._conn.execute("SELECT state FROM timer_jobs ORDER BY id")]
        fires = [
            PendingFire(job_id, datetime.fromisoformat(run_time), json.loads(body))
            for job_id, run_time, body in self._conn.execute(
                "SELECT job_id, run_time, body FROM timer_fires ORDER BY run_time"
            )
        ]
        return states, fires

    async def run_writer(self) -> None:
        """Commit queued changes in order, in batches; run it in a task group."""
        while True:
            batch = [await self._receive.receive()]
            with anyio.move_on_after(_FIRE_PRIORITY_S):
                while self._fires_in_flight:
                    await self._no_fires.wait()
            batch += take_queued(self._receive)
            await self._commit(batch)

    async def drain(self) -> None:
        """After the writer task has ended: commit what is still queued, accept no more."""
        self._send.close()
        await self._commit(take_queued(self._receive))

    async def _commit(self, batch: list[_Write]) -> None:
        statements = [item for item in batch if not isinstance(item, _Barrier)]
        durable = any(isinstance(item, _Barrier) and item.durable for item in batch)
        if statements:
            try:
                await anyio.to_thread.run_sync(self._apply, statements, durable)
            except sqlite3.Error:
                # The in-memory schedule stays right; the next start reads an older
                # one, and deterministic event ids keep a repeated fire harmless.
                log.exception("cannot save timer changes", changes=len(statements))
        for item in batch:
            if isinstance(item, _Barrier):
                item.done.set()

    def _apply(self, statements: list[_Statement], durable: bool) -> None:
        assert self._conn is not None
        if durable:
            self._conn.execute(f"PRAGMA synchronous={self._durable_synchronous}")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    self._conn.execute(sql, params)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        finally:
            if durable:
                self._conn.execute("PRAGMA synchronous=NORMAL")

    async def flush(self, *, durable: bool = False) -> None:
        """Wait until every change queued so far is committed (and synced, if durable)."""
        barrier = _Barrier(anyio.Event(), durable)
        self._send.send_nowait(barrier)
        await barrier.done.wait()

    def close(self) -> None:
        self._receive.close()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- APScheduler's job store interface (in memory, then queued) -------------

    def add_job(self, job: Job) -> None:
        super().add_job(job)
        self._queue_save(job)

    def update_job(self, job: Job) -> None:
        super().update_job(job)
        self._queue_save(job)

    def remove_job(self, job_id: str) -> None:
        super().remove_job(job_id)
        self._queue("DELETE FROM timer_jobs WHERE id = ?", (job_id,))

    def remove_all_jobs(self) -> None:
        super().remove_all_jobs()
        self._queue("DELETE FROM timer_jobs", ())

    def shutdown(self) -> None:
        # MemoryJobStore forgets its jobs here; ours stay stored for the next start.
        pass

    def _queue_save(self, job: Job) -> None:
        state = pickle.dumps(job.__getstate__(), pickle.HIGHEST_PROTOCOL)
        self._queue(
            "INSERT OR REPLACE INTO timer_jobs (id, next_run_time, state) VALUES (?, ?, ?)",
            (job.id, datetime_to_utc_timestamp(job.next_run_time), state),
        )

    def _queue(self, sql: str, params: tuple[Any, ...]) -> None:
        try:
            self._send.send_nowait((sql, params))
        except anyio.ClosedResourceError:
            log.warning("timer change after the scheduler stopped was not saved", sql=sql[:40])

    # -- fires in flight ------------------------------------------------------------

    def record_fire(self, fire: PendingFire, *, replayed: bool = False) -> None:
        self._fires_in_flight += 1
        if self._no_fires.is_set():
            self._no_fires = anyio.Event()
        self._queue(
            "INSERT OR REPLACE INTO timer_fires (job_id, run_time, body) VALUES (?, ?, ?)",
            (fire.job_id, fire.run_time.isoformat(), json.dumps(fire.body)),
        )

    async def claim_fire(self, fire: PendingFire) -> bool:
        return True  # one daemon per SQLite file: every run is this daemon's

    def fire_ended(self, fire: PendingFire, *, delivered: bool) -> None:
        """The fire's event is committed (forget it) or was not (keep it for the next start)."""
        if delivered:
            self._queue(
                "DELETE FROM timer_fires WHERE job_id = ? AND run_time = ?",
                (fire.job_id, fire.run_time.isoformat()),
            )
        self._fires_in_flight = max(0, self._fires_in_flight - 1)
        if not self._fires_in_flight:
            self._no_fires.set()
