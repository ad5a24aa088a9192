"""Helpers shared by the benchmarks: percentiles, tables, /proc readers, settling."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import anyio

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # so `tests.*` imports work however we are started
    sys.path.insert(0, str(REPO_ROOT))

from tests.fakes.model_server import FakeModelServer as FakeModelServer  # noqa: E402
from tests.processes import find_pgid  # noqa: E402

T = TypeVar("T")

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


async def timed(n: int, call: Callable[[], Awaitable[object]], *, warm_up: int = 1) -> list[float]:
    """Seconds each of ``n`` calls took, after ``warm_up`` unmeasured ones."""
    for _ in range(warm_up):
        await call()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation; nan for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def ms_row(name: str, seconds: Sequence[float]) -> list[str]:
    """A table row: name, n, p50, p99, max (milliseconds)."""
    ms = [s * 1000 for s in seconds]
    cells = [percentile(ms, 50), percentile(ms, 99), max(ms, default=math.nan)]
    return [name, str(len(ms)), *(f"{v:.2f}" for v in cells)]


LATENCY_HEADER = ["measure", "n", "p50 ms", "p99 ms", "max ms"]


def print_ratios(what: str, chat: Sequence[float], http: Sequence[float], note: str = "") -> None:
    """The chat path's latency over the HTTP API's, at p50 and p99."""
    for q in (50, 99):
        ratio = percentile(chat, q) / percentile(http, q)
        print(f"{what} → model / HTTP → model at p{q}: {ratio:.2f}×{note}")


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = str(cells[0]).ljust(widths[0])
        rest = (str(c).rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest])

    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


def iterations_parser(description: str, default_n: int) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--n", type=int, default=default_n, help="iterations per measure")
    return parser


def wall_to_monotonic(wall: float) -> float:
    """Convert a time.time() stamp (e.g. a feed item's `at`) to the monotonic clock."""
    return wall - (time.time() - time.monotonic())


async def settle(server: FakeModelServer, quiet_s: float = 0.2, timeout_s: float = 10.0) -> None:
    """Wait until the fake server saw no new request for quiet_s and none is open."""
    with anyio.fail_after(timeout_s):
        while True:
            seen = len(server.requests)
            await anyio.sleep(quiet_s)
            still_open = any(not (r.completed or r.aborted) for r in server.requests)
            if len(server.requests) == seen and not still_open:
                return


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def proc_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def proc_context_switches(pid: int) -> int:
    """Voluntary + involuntary context switches summed over all threads (wakeups)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                total += int(line.split()[1])
    return total


def live_group_members(pgid: int, candidates: Sequence[int]) -> list[int]:
    """Of `candidates`, those still alive (state not Z: PID 1 here reaps nothing) in pgid."""
    alive = []
    for pid in candidates:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            alive.append(pid)
    return alive


def find_shell_pgid(marker: str) -> int | None:
    """The process group of the `sh -c` whose command line carries `marker`, if any."""
    try:
        return find_pgid(marker)
    except (LookupError, ProcessLookupError):
        return None


async def wait_for_shell_pgid(marker: str, timeout_s: float = 10.0) -> int:
    with anyio.fail_after(timeout_s):
        while True:
            pgid = find_shell_pgid(marker)
            if pgid is not None:
                return pgid
            await anyio.sleep(0.02)  # polling the process table: there is no event to await


def wait_until_gone(pgid: int, candidates: Sequence[int], timeout_s: float = 30.0) -> float:
    """Block (in a thread) until no candidate is a live member of pgid; return that moment."""
    deadline = time.monotonic() + timeout_s
    while live_group_members(pgid, candidates):
        if time.monotonic() > deadline:
            raise TimeoutError(f"process group {pgid} still alive after {timeout_s} s")
        time.sleep(0.0005)
    return time.monotonic()


def quiet_daemon_logs() -> None:
    """Log as the harness's settings say (warnings only), to stderr, off the measured path."""
    from wakeful.kernel.logging import configure_logging

    configure_logging("warning", stream=sys.stderr)


class BenchFailed(Exception):
    """What the bench timed did not happen as it says (a request failed, a stub was
    not on the path): the bench stops with this one line, not a traceback."""


def run_like_the_daemon(main: Callable[..., Awaitable[T]], *args: object) -> T:
    """``anyio.run(main, *args)`` on the event loop ``wakeful run`` uses (uvloop where
    installed): a bench that runs the daemon in its own process times that loop.
    A :class:`BenchFailed` raised inside (also from a task group) exits 1 with its
    message."""
    from wakeful.app.service import event_loop_options

    try:
        return anyio.run(main, *args, backend_options=event_loop_options())
    except* BenchFailed as group:
        for failure in group.exceptions:
            print(f"FAILED: {failure}", file=sys.stderr)
        raise SystemExit(1) from None
