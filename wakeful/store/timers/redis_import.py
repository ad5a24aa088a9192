"""Moving a daemon's timers from its SQLite file into Redis, once.

Before timers followed ``[store] backend = "redis"``, a daemon on Redis kept
its jobs and fires in flight in ``<data_dir>/wakeful.db``. At start, the jobs
and fires found there are copied into Redis, where a job of the same id
(written by another daemon, or at an earlier start) wins; then they are
deleted from the file, so the copy happens once and a later start cannot
bring back a timer cancelled since.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import anyio.to_thread
import structlog
from redis.asyncio import Redis

log = structlog.get_logger(__name__)


def _read(path: Path) -> tuple[list[tuple[str, bytes]], list[tuple[str, str, str]]]:
    if not path.exists():
        return [], []
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if "timer_jobs" not in tables:
            return [], []
        jobs = [(str(i), bytes(s)) for i, s in conn.execute("SELECT id, state FROM timer_jobs")]
        fires = [(str(j), str(r), str(b)) for j, r, b in
                 conn.execute("SELECT job_id, run_time, body FROM timer_fires")]  # fmt: skip
        return jobs, fires
    finally:
        conn.close()


def _clear(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM timer_jobs")
        conn.execute("DELETE FROM timer_fires")
        conn.execute("COMMIT")
    finally:
        conn.close()


async def import_sqlite_timers(path: Path, client: Redis, prefix: str) -> int:
    """Copy the file's timers into Redis (existing ids kept); how many were copied."""
    jobs, fires = await anyio.to_thread.run_sync(_read, path)
    if not jobs and not fires:
        return 0
    async with client.pipeline(transaction=True) as pipe:
        for job_id, state in jobs:
            pipe.hsetnx(f"{prefix}timer:jobs", job_id, base64.b64encode(state).decode())
        for job_id, run_time, body in fires:
            fire = json.dumps({"job_id": job_id, "run_time": run_time, "body": json.loads(body)})
            pipe.hsetnx(f"{prefix}timer:fires", f"{job_id} {run_time}", fire)
        await pipe.execute()
    await anyio.to_thread.run_sync(_clear, path)
    log.warning("timers moved from the SQLite file into Redis", jobs=len(jobs), fires=len(fires))
    return len(jobs)
