"""Does the in-process daemon cost what ``wakeful run`` costs? The same load on both.

``bench.webhook_ingest`` and ``bench.ingest_stages`` run the daemon inside the
bench's own process (the stages need to patch it); ``bench.peer_ingest`` and
``bench.fleet_ingest`` run ``wakeful run`` processes. Figures from different runs
differ by more than either's noise on this kind of machine, so this bench puts
both side by side: one ``wakeful run`` (the tests' config plus the bench's hook)
and one in-process daemon (``bench.webhook_ingest``'s settings), the same wrk
load (16 connections, signed deliveries) alternating between them each round.
It prints req/s and the daemon's CPU µs per request of each, and their ratio.
Needs wrk (``apt-get install wrk``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import BenchFailed, print_table, proc_cpu_seconds, run_like_the_daemon
from bench.peer_ingest import wakeful_config
from bench.webhook_ingest import CLIENTS, bench_directory, bench_settings, signed_wrk
from bench.webhook_wrk import available as wrk_available
from tests.daemon_harness import harness
from tests.daemon_process import DaemonProcess, free_port


async def load(
    url: str, directory: Path, cpu: Callable[[], float], tag: str, seconds: float
) -> tuple[float, float]:
    """(req/s, daemon CPU µs per request) of one wrk run."""
    run = await signed_wrk(url, directory, seconds, tag, cpu)
    if run.errors:
        raise BenchFailed(f"{url}: {run.errors} of {run.done} requests were not 202")
    assert run.cpu_us is not None
    return run.rate, run.cpu_us


async def main(rounds: int, seconds: float) -> int:
    if not wrk_available():
        print("wrk is not installed (apt-get install wrk)")
        return 2
    with bench_directory() as directory:  # the in-process daemon logs there
        port = free_port()
        with DaemonProcess(wakeful_config(directory / "process", port, "info"), port) as proc:
            assert proc.proc is not None
            pid = proc.proc.pid
            async with harness(bench_settings(directory / "inprocess")) as h:
                sides = {
                    "wakeful run": (proc.url, lambda: proc_cpu_seconds(pid)),
                    "in-process": (h.running.url, time.process_time),
                }
                for name, (url, cpu) in sides.items():  # warm-up
                    await load(url, directory, cpu, f"warm-{name[:2]}", 1)
                figures: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
                for r in range(rounds):
                    for name, (url, cpu) in sides.items():
                        tag = f"{name[:2]}{r}"
                        figures[name].append(await load(url, directory, cpu, tag, seconds))
    report(figures, seconds)
    return 0


def report(figures: dict[str, list[tuple[float, float]]], seconds: float) -> None:
    print(f"the same wrk load ({CLIENTS} connections, {seconds:.0f} s), alternating each round")
    rows = []
    for name, runs in figures.items():
        rates, cpus = [f[0] for f in runs], [f[1] for f in runs]
        each = " / ".join(f"{c:.0f}" for c in cpus)
        rows.append(
            [name, f"{statistics.median(rates):.0f}", f"{statistics.median(cpus):.0f}", each]
        )
    print_table(["daemon", "req/s", "CPU us/req", "CPU per round"], rows)
    ours, theirs = (statistics.median(f[1] for f in runs) for runs in figures.values())
    print(f"baseline: wakeful run; in-process CPU per request / wakeful run's: {theirs / ours:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4)
    cli = parser.parse_args()
    raise SystemExit(run_like_the_daemon(main, cli.rounds, cli.seconds))
