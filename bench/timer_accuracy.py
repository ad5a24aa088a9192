"""Timer accuracy: how late a one-shot timer's event is, against its scheduled time.

The daemon runs in-process (tests/daemon_harness.py) with no model
configured, so fired events wait in their session and only the timer path
is measured. `--n` one-shot timers are set through the `set_timer` tool
with ISO times spread uniformly over `--spread` seconds (starting 2 s
later), plus `--burst` timers all due at one instant after that. Measured,
as wall-clock time minus the scheduled time:

* running: when the fire task starts building the event (scheduler wake-up
  plus task start);
* committed: when `services.submit` returned for the `timer.trigger` event
  (stored, deduplicated, routed; the executor's `on_outcome` hook);
* notified: when the session's feed delivered the routed event to a
  subscriber — the dispatcher notifies the session loop in the same step.

Baseline in the same run, on the same event loop and at the same moments
(each deadline 1 ms after a timer's): a task doing `anyio.sleep_until`
to the deadline, measured when it wakes. And, after the timers, the cost of
one durable commit on the same disk: a one-row INSERT + COMMIT into a WAL
SQLite file with the daemon's `synchronous` setting, from a worker thread
as the store does it.

With `--redis` the same timers then run a second time on `[store] backend =
"redis"` (a fresh key prefix on 127.0.0.1:6379, deleted afterwards): the job
store is in Redis and each run is claimed with `SET NX` before its event is
submitted. Its baseline is one `SET NX PX` round trip to the same server.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import redis

from bench.common import (
    LATENCY_HEADER,
    FakeModelServer,
    iterations_parser,
    ms_row,
    print_table,
    quiet_daemon_logs,
    run_like_the_daemon,
)
from tests.daemon_harness import Harness, daemon_settings, harness
from tests.redis_server import REDIS_URL, delete_prefix
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.tool import ToolContext
from wakeful.sources.timers.firing import Outcome, TimerExecutor
from wakeful.store.timers.port import PendingFire

SESSION = "bench-timers"
LEAD_S = 2.0


async def _reply(_: str) -> None:
    return None


async def set_timers(h: Harness, deadlines: list[float], tmp: Path) -> None:
    """Set them concurrently: the job store commits the flushes in a few batches."""
    ctx = ToolContext(SESSION, "bench", tmp, tmp, CombinedTaskView([]), _reply)

    async def one(i: int, deadline: float) -> None:
        at = datetime.fromtimestamp(deadline, UTC).isoformat()
        args = f'{{"at": "{at}", "message": "timer {i}"}}'
        out = await h.running.registrations.tools.execute("set_timer", args, ctx)
        assert not out.is_error, out.text

    async with anyio.create_task_group() as tg:
        for i, deadline in enumerate(deadlines):
            tg.start_soon(one, i, deadline)


async def baseline(deadline_wall: float, lateness: list[float]) -> None:
    await anyio.sleep_until(anyio.current_time() + (deadline_wall - time.time()))
    lateness.append(time.time() - deadline_wall)


async def measure(
    n: int, spread_s: float, burst: int, redis_prefix: str | None = None
) -> dict[str, list[float]]:
    quiet_daemon_logs()
    committed: list[float] = []
    started: list[float] = []
    notified: list[float] = []
    base: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as server:
        store: dict[str, Any] = {}
        if redis_prefix is not None:
            store = {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": redis_prefix}
        settings = daemon_settings(Path(tmp), server.base_url, llm={"model": ""}, store=store)
        async with harness(settings) as h:
            start = time.time() + LEAD_S + n * 0.01  # setting n timers takes a moment
            deadlines = [start + random.uniform(0, spread_s) for _ in range(n)]
            deadlines += [start + spread_s + 0.5] * burst
            await set_timers(h, deadlines, Path(tmp))

            def on_outcome(fire: PendingFire, outcome: Outcome) -> None:
                committed.append(_late(fire))
                started.append(outcome.late_s)

            _executor(h).on_outcome = on_outcome
            async with h.daemon.subscribe(SESSION) as feed, anyio.create_task_group() as tg:
                for deadline in deadlines:
                    tg.start_soon(baseline, deadline + 0.001, base)
                with anyio.fail_after(spread_s + LEAD_S + n * 0.01 + 30):
                    async for item in feed:
                        if item.get("kind") == "timer.trigger":
                            notified.append(time.time() - _scheduled(item))
                            if len(notified) == len(deadlines):
                                break
        sync = settings.store.sqlite_synchronous
        if redis_prefix is None:
            raw = await anyio.to_thread.run_sync(raw_commits, Path(tmp), 50, sync)
        else:
            raw = await anyio.to_thread.run_sync(redis_round_trips, redis_prefix, 50)
    return {
        "started": started,
        "committed": committed,
        "notified": notified,
        "baseline": base,
        "raw": raw,
    }


def raw_commits(directory: Path, n: int, synchronous: str) -> list[float]:
    conn = sqlite3.connect(directory / "raw.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
    took = []
    for i in range(n):
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (body) VALUES (?)", (f"event {i}" * 20,))
        conn.execute("COMMIT")
        took.append(time.perf_counter() - started)
    conn.close()
    return took


def redis_round_trips(prefix: str, n: int) -> list[float]:
    client = redis.Redis.from_url(REDIS_URL)
    took = []
    try:
        for i in range(n):
            started = time.perf_counter()
            client.set(f"{prefix}bench:claim:{i}", "1", nx=True, px=60_000)
            took.append(time.perf_counter() - started)
    finally:
        client.close()
    return took


def _executor(h: Harness) -> TimerExecutor:
    tool: Any = h.running.registrations.tools.get("set_timer")
    executor: TimerExecutor = tool._service.executor
    return executor


def _late(fire: PendingFire) -> float:
    return time.time() - fire.run_time.timestamp()


def _scheduled(item: dict[str, Any]) -> float:
    # The event id ends with the scheduled time: timer:<job id>:<ISO UTC>.
    iso = str(item["event_id"]).rsplit(":", 3)[-3:]
    return datetime.fromisoformat(":".join(iso)).timestamp()


def main() -> None:
    parser = iterations_parser("Timer fire lateness (p50/p99)", default_n=200)
    parser.add_argument("--spread", type=float, default=10.0, help="seconds the timers span")
    parser.add_argument("--burst", type=int, default=20, help="extra timers due at one instant")
    parser.add_argument("--redis", action="store_true", help="also on the Redis backend")
    args = parser.parse_args()
    report("sqlite", run_like_the_daemon(measure, args.n, args.spread, args.burst), args)
    if args.redis:
        prefix = f"bench-timers:{uuid.uuid4().hex}:"
        try:
            report(
                "redis", run_like_the_daemon(measure, args.n, args.spread, args.burst, prefix), args
            )
        finally:
            delete_prefix(prefix)


def report(backend: str, results: dict[str, list[float]], args: argparse.Namespace) -> None:
    total = args.n + args.burst
    print(f"{backend}: {args.n} one-shot timers over {args.spread:g} s + a burst of "
          f"{args.burst}; lateness")  # fmt: skip
    floor = "one durable SQLite commit" if backend == "sqlite" else "one Redis SET NX round trip"
    print_table(
        LATENCY_HEADER,
        [
            ms_row("timer → fire task running", results["started"]),
            ms_row("timer → event committed", results["committed"]),
            ms_row("timer → session notified (feed)", results["notified"]),
            ms_row("baseline: anyio.sleep_until wake", results["baseline"]),
            ms_row(f"baseline: {floor}", results["raw"]),
        ],
    )
    if len(results["committed"]) != total:
        print(f"WARNING: {len(results['committed'])} of {total} timers committed")


if __name__ == "__main__":
    main()
