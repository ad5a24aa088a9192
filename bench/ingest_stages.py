"""Where a signed webhook delivery's CPU goes: the path taken apart in one run.

The daemon runs in this process as in ``bench.webhook_ingest`` (one Standard
Webhooks hook, no model, the daemon's own event loop, logging at info to a
file) and wrk sends 16 connections' worth of signed deliveries. Between
measurements the bench replaces one part of the path with a stub, so each row
does less than the one below it:

1. **transport**: the hook's direct route answers a constant 202 at once (the
   event loop, the HTTP parser, the direct lane, a task per request, the
   answer's one write): the floor of any answer the daemon gives.
2. **checks**: plus the webhook's own work: the signature, the JSON, the
   event built and validated, the 202's body; the commit is a stub.
3. **routing**: plus the dispatcher (routing rules, metrics, the log line,
   the live feed, the session's wake-up); the store's append is a stub.
4. **committed**: what the product does: plus the durable commit in the
   store's thread (the event serialized, inserted and fsynced with others).

Stages alternate within each round, so drift on a noisy machine spreads over
all four. Each part's cost is the difference between two rows' medians.
Two more columns say whether the event loop's thread was the limit: the share
of wrk's run it was busy (its own CPU time over the run's length; the rest it
waited for the network or the store), and, when committing, how many appends
each of the store's transactions held (16 connections: at most 16).
Needs wrk (``apt-get install wrk``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.common import BenchFailed, print_table, run_like_the_daemon
from bench.webhook_ingest import (
    CLIENTS,
    bench_directory,
    bench_settings,
    signed_wrk,
    stored_events,
)
from bench.webhook_wrk import available as wrk_available
from tests.daemon_harness import Harness, harness
from wakeful.core.front_door import SubmitResult
from wakeful.kernel.events import Event
from wakeful.kernel.http.direct import DirectAnswer, json_bytes
from wakeful.sources.webhook.ingress import HookIngress
from wakeful.store.base import AppendResult, EventStatus, StoredEvent
from wakeful.store.connection_thread import ConnectionThread
from wakeful.store.sqlite import SqliteStore

STAGES = ("transport", "checks", "routing", "committed")
CONSTANT = DirectAnswer(202, json_bytes({"event_id": "wh:bench:constant", "duplicate": False}))


@dataclass
class Seen:
    """How many deliveries the stage's stub (or, committed, the store) took: a stage
    whose stub is not on the deliveries' path would time something else; and the
    store's transactions of appends and the appends they held."""

    n: int = 0
    commits: int = 0
    appended: int = 0

    def per_commit(self) -> float | None:
        return self.appended / self.commits if self.commits else None


def _stubs(seen: Seen) -> dict[str, tuple[type, str, Callable[..., Any]]]:
    """Per stage: the class, the method and what stands in for it."""

    async def constant(self: HookIngress, rest: str, headers: Any, body: bytes) -> DirectAnswer:
        seen.n += 1
        return CONSTANT

    async def no_commit(self: HookIngress, event: Event) -> SubmitResult:
        seen.n += 1
        return SubmitResult(event.id, duplicate=False)

    async def append(
        self: SqliteStore,
        event: Event,
        status: EventStatus = EventStatus.PENDING,
        strategy: str | None = None,
        reason: str | None = None,
        cursor: object = None,
    ) -> AppendResult:
        seen.n += 1
        stored = StoredEvent(seen.n, event, status, strategy, reason, time.time())
        return AppendResult(stored, True)

    return {
        "transport": (HookIngress, "answer", constant),
        "checks": (HookIngress, "_commit", no_commit),
        "routing": (SqliteStore, "append", append),
    }


@contextmanager
def stage(name: str, data_dir: Path) -> Iterator[Seen]:
    """The path with every part above ``name`` replaced by a stub."""
    seen = Seen()
    stubs = _stubs(seen)
    if name not in stubs:  # committed: what the store gained, and in how many commits
        before = stored_events(data_dir)
        commit_batch = ConnectionThread._commit_batch

        def counted(self: ConnectionThread[Any, Any], batch: list[Any]) -> Any:
            seen.commits += 1  # in the store's thread; the loop reads it after wrk
            seen.appended += len(batch)
            return commit_batch(self, batch)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ConnectionThread, "_commit_batch", counted)
            yield seen
        seen.n = stored_events(data_dir) - before
        return
    owner, method, stub = stubs[name]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(owner, method, stub)  # raises if the method is gone
        yield seen


async def measure(h: Harness, directory: Path, name: str, seconds: float, tag: str) -> Figures:
    """One stage's figures; fails when a request failed or the stage's stub (the
    store, for committed) did not take every delivery."""
    with stage(name, directory / "daemon") as seen:
        # This coroutine runs in the event loop's thread, idle but for the daemon while
        # the requests are signed and sent from a worker thread: its CPU time around the
        # run is the daemon loop's.
        loop_cpu = time.thread_time()
        run = await signed_wrk(h.running.url, directory, seconds, tag, time.process_time)
        loop_cpu = time.thread_time() - loop_cpu
    if run.errors:
        raise BenchFailed(f"{name}: {run.errors} of {run.done} requests failed (not 202)")
    # wrk counts completed requests; those in flight at its stop were taken too.
    if seen.n < run.done:
        raise BenchFailed(f"{name}: {seen.n} of {run.done} deliveries took the stage's path")
    assert run.cpu_us is not None
    # The loop also works a little outside wrk's own timing (its connections opening
    # and closing): a saturated loop can come out a per cent over; that reads as 100 %.
    busy = min(loop_cpu / run.elapsed_s, 1.0)
    return Figures(run.rate, run.cpu_us, busy, seen.per_commit())


@dataclass(frozen=True)
class Figures:
    """One stage in one round: req/s, the daemon's CPU µs per delivery (all threads),
    the share of the run its loop's thread was busy, appends per commit (committed)."""

    rate: float
    cpu_us: float
    loop_busy: float
    per_commit: float | None


async def main(rounds: int, seconds: float, stages: list[str]) -> int:
    if not wrk_available():
        print("wrk is not installed (apt-get install wrk)")
        return 2
    with bench_directory() as directory:
        figures: dict[str, list[Figures]] = {name: [] for name in stages}
        async with harness(bench_settings(directory / "daemon")) as h:
            await measure(h, directory, "committed", 1, "warmup")
            for r in range(rounds):
                for name in stages:
                    figures[name].append(await measure(h, directory, name, seconds, f"{name}{r}"))
    report(figures, rounds, seconds)
    return 0


def report(figures: dict[str, list[Figures]], rounds: int, seconds: float) -> None:
    print(
        f"webhook ingest taken apart: wrk, {CLIENTS} connections, {seconds:.0f} s per stage, "
        f"{rounds} rounds alternating; medians (every round in brackets)"
    )
    rows, below = [], 0.0
    for name in figures:
        rounds_of = figures[name]
        cpus = [f.cpu_us for f in rounds_of]
        cpu = statistics.median(cpus)
        per_commit = [f.per_commit for f in rounds_of if f.per_commit is not None]
        rows.append(
            [
                name,
                f"{statistics.median(f.rate for f in rounds_of):.0f}",
                f"{cpu:.0f}",
                f"+{cpu - below:.0f}" if below else "-",
                " / ".join(f"{c:.0f}" for c in cpus),
                f"{100 * statistics.median(f.loop_busy for f in rounds_of):.0f} %",
                f"{statistics.median(per_commit):.1f}" if per_commit else "-",
            ]
        )
        below = cpu
    header = ["stage", "req/s", "CPU us/req", "this part", "CPU per round", "loop busy"]
    print_table([*header, "appends/commit"], rows)
    print(
        "baseline: the transport row (a constant answer on the same server and loop); "
        "each part's share of a committed delivery is 'this part' over the last row's CPU"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3, help="wrk's run per stage and round")
    parser.add_argument(
        "--stages",
        default=",".join(STAGES),
        help="which stages, comma-separated (one alone, for a profiler: "
        "py-spy record --nonblocking -- python -m bench.ingest_stages --stages checks)",
    )
    cli = parser.parse_args()
    chosen = cli.stages.split(",")
    if unknown := [name for name in chosen if name not in STAGES]:
        parser.error(f"--stages: unknown {', '.join(unknown)}; choose from {', '.join(STAGES)}")
    raise SystemExit(run_like_the_daemon(main, cli.rounds, cli.seconds, chosen))
