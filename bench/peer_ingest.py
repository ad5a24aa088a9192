"""Webhook ingest beside a peer gateway: the same load against both, in one run.

wakeful runs as ``wakeful run`` in a process of its own, as a user runs it
(signed Standard Webhooks, 202 only after the SQLite commit, logging at its
default level to its stdout, read by this process); the peer is a gateway
already running on a loopback port (e.g. OpenClaw, see bench/README.md for how
to start it under /tmp), sent the same JSON body unsigned with its hook token in
a header. Each server's CPU time is read from /proc. Each round measures
both with the same load generator (``bench/webhook_load.py``, in a process of
its own): 1 client (n/4 requests) and 16 concurrent keep-alive clients (n
requests), then, if wrk is installed, 16 wrk connections for a few seconds.
Rounds alternate which of the two goes first, and each prints the load
average, since other work on the machine moves req/s more than anything here.

The bench installs and starts nothing of the peer's, and no test needs it.
It fails (exit 1, after printing) when a request did not get its 2xx or
wakeful did not store every event it acknowledged.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import anyio.to_thread

from bench.common import LATENCY_HEADER, ms_row, print_table, proc_cpu_seconds
from bench.webhook_ingest import BENCH_HOOK, WRK_MAX_RATE, signed_requests, stored_events
from bench.webhook_load import build_request, run_load
from bench.webhook_wrk import available as wrk_available
from bench.webhook_wrk import run_wrk
from tests.daemon_process import DaemonProcess, free_port, write_config
from wakeful.app.config import DaemonSection

CLIENTS = 16
WARM_UP = 200


@dataclass(frozen=True)
class Peer:
    host: str
    port: int
    path: str
    headers: dict[str, str]
    pid: int | None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@dataclass
class Tally:
    """What went wrong across the run: the bench fails if anything is here."""

    problems: list[str] = field(default_factory=list)


def peer_requests(peer: Peer, tag: str, n: int) -> list[bytes]:
    """Unsigned requests with wakeful's body, each naming a different job: the
    peer's wake queue drops a text equal to the one before it (coalesces)."""
    out = []
    for i in range(n):
        body = json.dumps({"type": "build.finished", "data": {"name": f"{tag}-{i}", "ok": True}})
        headers = {"content-type": "application/json", **peer.headers}
        out.append(build_request(peer.host, peer.port, peer.path, headers, body.encode()))
    return out


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants (the gateway's workers count too)."""
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        try:
            total += proc_cpu_seconds(current)
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # exited between the listing and the read
            continue
    return total


@dataclass(frozen=True)
class Target:
    """One side of the comparison: how to build its requests and read its CPU time."""

    name: str
    url: str
    ok_status: int
    build: Callable[[str, int], list[bytes]]
    cpu: Callable[[], float] | None


@dataclass(frozen=True)
class Measured:
    """One load's req/s and server CPU per request (µs; None when not measured)."""

    rate: float
    cpu_us: float | None


async def measure(
    pool: ProcessPoolExecutor, target: Target, n: int, clients: int, tally: Tally
) -> tuple[list[str], Measured]:
    """A table row for ``n`` requests over ``clients`` connections, and its figures."""
    parts = urlsplit(target.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    requests = target.build(f"c{clients}-{time.monotonic_ns()}", n)
    per_client = [requests[i::clients] for i in range(clients)]

    def call() -> tuple[float, list[float], list[int]]:
        return pool.submit(run_load, host, port, per_client).result()

    cpu_before = target.cpu() if target.cpu else 0.0
    elapsed, latencies, statuses = await anyio.to_thread.run_sync(call)
    cpu_us = (target.cpu() - cpu_before) / n * 1e6 if target.cpu else None
    bad = sum(1 for s in statuses if s != target.ok_status)
    if bad:
        tally.problems.append(f"{target.name}: {bad} of {n} not {target.ok_status}")
    rate = n / elapsed
    name = f"{target.name}, {clients} client(s)"
    return [*ms_row(name, latencies), f"{rate:.0f}", _us(cpu_us), str(bad)], Measured(rate, cpu_us)


def _us(cpu_us: float | None) -> str:
    return "-" if cpu_us is None else f"{cpu_us:.0f}"


async def measure_wrk(
    target: Target, directory: Path, seconds: float, tally: Tally
) -> tuple[list[str], Measured]:
    requests = target.build(f"wrk-{time.monotonic_ns()}", int(seconds * WRK_MAX_RATE))
    run = await anyio.to_thread.run_sync(
        run_wrk, target.url, requests, directory, CLIENTS, seconds, target.cpu
    )
    if run.errors:
        tally.problems.append(f"{target.name}: wrk counted {run.errors} errors")
    name = f"{target.name}, wrk {CLIENTS} conns {seconds:.0f} s"
    row = [name, str(run.done), *(f"{v:.2f}" for v in run.ms), f"{run.rate:.0f}"]
    return [*row, _us(run.cpu_us), str(run.errors)], Measured(run.rate, run.cpu_us)


def wakeful_config(data_dir: Path, port: int, log_level: str) -> Path:
    """The tests' `wakeful run` config with the bench's one signed hook."""
    path = write_config(data_dir, None, port, log_level=log_level)
    # A JSON string is a TOML basic string (the same quotes and escapes).
    hook = ["[[hooks]]", *(f"{key} = {json.dumps(value)}" for key, value in BENCH_HOOK.items())]
    with path.open("a") as config:
        config.write("\n".join(hook) + "\n")
    return path


def wakeful_target(daemon: DaemonProcess) -> Target:
    parts = urlsplit(daemon.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    assert daemon.proc is not None
    pid = daemon.proc.pid
    return Target(
        name="wakeful (signed, committed)",
        url=daemon.url,
        ok_status=202,
        build=lambda tag, n: signed_requests(host, port, tag, n),
        cpu=lambda: proc_cpu_seconds(pid),
    )


def peer_target(peer: Peer, ok_status: int) -> Target:
    pid = peer.pid
    return Target(
        name="peer (unsigned)",
        url=peer.url,
        ok_status=ok_status,
        build=lambda tag, n: peer_requests(peer, tag, n),
        cpu=(lambda: tree_cpu_seconds(pid)) if pid is not None else None,
    )


async def run_round(
    pool: ProcessPoolExecutor,
    order: Sequence[Target],
    n: int,
    wrk_seconds: float,
    directory: Path,
    tally: Tally,
) -> tuple[list[list[str]], dict[str, dict[str, Measured]]]:
    rows: list[list[str]] = []
    rates: dict[str, dict[str, Measured]] = {}
    for target in order:
        seq_row, seq = await measure(pool, target, n // 4, 1, tally)
        conc_row, conc = await measure(pool, target, n, CLIENTS, tally)
        rows += [seq_row, conc_row]
        rates[target.name] = {"seq": seq, "conc": conc}
        if wrk_seconds:
            wrk_row, wrk = await measure_wrk(target, directory, wrk_seconds, tally)
            rows.append(wrk_row)
            rates[target.name]["wrk"] = wrk
    return rows, rates


@dataclass
class Ratios:
    """Per load kind, one figure a round: wakeful's req/s over the peer's, and the
    peer's server CPU per request over wakeful's (above 1, wakeful spends less per
    request; it does not count what the machine's other work took from either)."""

    rate: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)


async def compare(
    pool: ProcessPoolExecutor,
    daemon: DaemonProcess,
    theirs: Target,
    args: argparse.Namespace,
    tally: Tally,
) -> Ratios:
    """The rounds, printed as they finish, and their ratios per load kind."""
    ours = wakeful_target(daemon)
    wrk_seconds = args.wrk_seconds if wrk_available() else 0.0
    for target in (ours, theirs):  # JIT, caches, connection set-up
        await measure(pool, target, WARM_UP, CLIENTS, tally)
    stored_before = stored_events(args.data_dir)
    ratios = Ratios()
    for r in range(args.rounds):
        order = (theirs, ours) if r % 2 == 0 else (ours, theirs)
        load = os.getloadavg()
        rows, rates = await run_round(pool, order, args.n, wrk_seconds, args.directory, tally)
        print(f"\nround {r + 1}, load average before it {load[0]:.2f} {load[1]:.2f}")
        print_table([*LATENCY_HEADER, "req/s", "server CPU us/req", "bad"], rows)
        for kind, their in rates[theirs.name].items():
            mine = rates[ours.name][kind]
            ratios.rate.setdefault(kind, []).append(mine.rate / their.rate)
            line = f"wakeful / peer, {kind}: {ratios.rate[kind][-1]:.2f}×"
            if mine.cpu_us and their.cpu_us:
                ratios.cpu.setdefault(kind, []).append(their.cpu_us / mine.cpu_us)
                line += f" (server CPU per request, peer / wakeful: {ratios.cpu[kind][-1]:.2f}×)"
            print(line)
    # wrk counts completed requests only (in-flight ones at its stop are stored too),
    # so the check counts the Python client's requests, which all completed.
    sent = args.rounds * (args.n // 4 + args.n)
    stored = stored_events(args.data_dir) - stored_before
    if stored < sent:
        tally.problems.append(f"wakeful stored {stored} events of {sent} acknowledged")
    return ratios


async def main(args: argparse.Namespace, peer: Peer) -> int:
    tally = Tally()
    with tempfile.TemporaryDirectory() as tmp:
        args.directory = Path(tmp)
        args.data_dir = args.directory / "daemon"
        port = free_port()
        config = wakeful_config(args.data_dir, port, args.log_level)
        context = multiprocessing.get_context("spawn")
        with (
            ProcessPoolExecutor(1, mp_context=context) as pool,
            DaemonProcess(config, port) as daemon,
        ):
            ratios = await compare(pool, daemon, peer_target(peer, args.peer_status), args, tally)
    summary(ratios, peer, args.wrk_seconds)
    for problem in tally.problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if tally.problems else 0


def summary(ratios: Ratios, peer: Peer, wanted_wrk: float) -> None:
    print(f"\npeer: POST {peer.url}{peer.path} (headers: {', '.join(peer.headers)})")
    for label, figures in (
        ("wakeful / peer req/s", ratios.rate),
        ("peer / wakeful server CPU per request", ratios.cpu),
    ):
        for kind, values in figures.items():
            listed = ", ".join(f"{v:.2f}" for v in values)
            median = statistics.median(values)
            print(f"{label}, {kind}: median {median:.2f}× (rounds: {listed})")
    if wanted_wrk and not wrk_available():
        print("wrk is not installed (apt-get install wrk): no wrk rows")
    print("target (issue 23): >= 2× req/s at 16 concurrent keep-alive clients")


def parse_peer(args: argparse.Namespace) -> Peer:
    parts = urlsplit(args.peer_url)
    if parts.scheme != "http" or not parts.hostname or not parts.port:
        raise SystemExit("--peer-url must be http://HOST:PORT")
    if not parts.hostname.startswith("127.") and parts.hostname not in ("localhost", "::1"):
        raise SystemExit("--peer-url must be a loopback address: load goes only to this machine")
    name, _, template = args.peer_auth_header.partition(":")
    headers = {name.strip(): template.strip().format(token=args.peer_token)}
    return Peer(parts.hostname, parts.port, args.peer_path, headers, args.peer_pid)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peer-url", required=True, help="e.g. http://127.0.0.1:18789")
    parser.add_argument("--peer-token", required=True, help="the peer's hook token")
    parser.add_argument(
        "--peer-path", default="/hooks/bench", help="hook path on the peer (default /hooks/bench)"
    )
    parser.add_argument(
        "--peer-auth-header",
        default="Authorization: Bearer {token}",
        help="how the peer wants its token (default 'Authorization: Bearer {token}')",
    )
    parser.add_argument("--peer-status", type=int, default=200, help="the peer's success status")
    parser.add_argument(
        "--peer-pid", type=int, help="the peer's server process: adds its CPU time per request"
    )
    parser.add_argument("--n", type=int, default=8000, help="requests with 16 clients per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--wrk-seconds", type=float, default=5, help="wrk rows' length, if installed; 0: none"
    )
    default_level = DaemonSection.model_fields["log_level"].default
    parser.add_argument("--log-level", default=default_level)
    cli = parser.parse_args()
    sys.exit(anyio.run(main, cli, parse_peer(cli)))
