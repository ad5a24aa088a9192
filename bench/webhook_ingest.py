"""Webhook ingest: signed (Standard Webhooks) and committed before the 202.

Runs the daemon in this process (one hook, no model, so nothing but ingest
uses the CPU) and the load in a separate process, sequentially (1 client)
and with 16 concurrent keep-alive clients. The daemon logs at its default
level (info: one "event routed" line per delivery) to a file, as it would
to journald. Besides latency and throughput, each row gives the daemon's
CPU time per request (all its threads), which varies less between machines
and runs than requests/s. The baseline, measured in the same run on the
same disk: raw SQLite inserts with the daemon's durability setting (WAL,
synchronous=FULL), one commit per row and 16 rows per commit.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import anyio
import anyio.to_thread
from standardwebhooks.webhooks import Webhook

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, print_table, run_like_the_daemon
from bench.webhook_load import build_request, run_load
from bench.webhook_wrk import WrkRun, run_wrk
from bench.webhook_wrk import available as wrk_available
from tests.daemon_harness import daemon_settings, harness
from wakeful.app.config import DaemonSection, Settings
from wakeful.kernel.logging import configure_logging

SECRET = "whsec_" + base64.b64encode(b"bench-secret-32-bytes-long-abcde").decode()
# The bench's one hook, for the in-process daemon's settings and `wakeful run`'s config.
BENCH_HOOK = {"name": "bench", "secret": SECRET, "template": "{type}: {data.name}"}
CLIENTS = 16
# Signed requests prepared per second of wrk: more than the daemon can take, so none repeat.
WRK_MAX_RATE = 10_000


def signed_requests(host: str, port: int, prefix: str, n: int) -> list[bytes]:
    signer, now = Webhook(SECRET), datetime.now(tz=UTC)
    out = []
    for i in range(n):
        body = json.dumps({"type": "build.finished", "data": {"name": f"job-{i}", "ok": True}})
        msg_id = f"{prefix}-{i}"
        headers = {
            "content-type": "application/json",
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": signer.sign(msg_id, now, body),
        }
        out.append(build_request(host, port, "/hooks/bench", headers, body.encode()))
    return out


@contextmanager
def bench_directory(log_level: str = "info") -> Iterator[Path]:
    """A temporary directory for one run, the in-process daemon logging to a file in it
    (JSON, as to journald)."""
    with tempfile.TemporaryDirectory() as tmp, (Path(tmp) / "daemon.log").open("w") as log:
        configure_logging(log_level, json=True, stream=log)
        yield Path(tmp)


def stored_events(data_dir: Path) -> int:
    """Events in the daemon's store, read from its SQLite file (WAL: a reader beside
    the daemon, in this process or another, sees every committed row)."""
    with sqlite3.connect(f"file:{data_dir / 'wakeful.db'}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])


def bench_settings(data_dir: Path, sync: str = "full", log_level: str = "info") -> Settings:
    """The bench's daemon: one signed hook, no model (events are stored, not answered)."""
    return daemon_settings(
        data_dir,
        "http://127.0.0.1:9",
        hooks=[dict(BENCH_HOOK)],
        llm={"model": ""},
        store={"sqlite_synchronous": sync},
        daemon={"data_dir": str(data_dir), "log_level": log_level},
    )


async def signed_wrk(
    url: str, directory: Path, seconds: float, tag: str, cpu: Callable[[], float] | None = None
) -> WrkRun:
    """wrk's ``CLIENTS`` connections posting signed deliveries to the bench's hook at
    ``url`` for ``seconds``; ``cpu`` as for ``run_wrk``. The requests are signed in the
    worker thread too, so the caller's event loop (the daemon's, in-process) stays idle
    but for the daemon."""
    host, port = url.removeprefix("http://").rsplit(":", 1)

    def sign_and_send() -> WrkRun:
        requests = signed_requests(host, int(port), tag, int(seconds * WRK_MAX_RATE))
        return run_wrk(url, requests, directory, CLIENTS, seconds, cpu)

    return await anyio.to_thread.run_sync(sign_and_send)


def sqlite_rate(directory: Path, n: int, batch: int) -> float:
    conn = sqlite3.connect(directory / f"raw-{batch}.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, id TEXT UNIQUE, body TEXT)")
    body = "x" * 600  # about the size of one stored webhook event
    started = time.perf_counter()
    for first in range(0, n, batch):
        conn.execute("BEGIN IMMEDIATE")
        for i in range(first, min(first + batch, n)):
            conn.execute("INSERT INTO events (id, body) VALUES (?, ?)", (f"e{i}", body))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return n / elapsed


async def measure(pool: ProcessPoolExecutor, url: str, n: int, clients: int, tag: str) -> list[str]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    requests = signed_requests(host, int(port), tag, n)
    per_client = [requests[i::clients] for i in range(clients)]

    def call() -> tuple[float, list[float], list[int]]:
        return pool.submit(run_load, host, int(port), per_client).result()

    cpu_before = time.process_time()  # this process is the daemon; the load runs in the pool's
    elapsed, latencies, statuses = await anyio.to_thread.run_sync(call)
    cpu_us = (time.process_time() - cpu_before) / n * 1e6
    bad = sum(1 for s in statuses if s != 202)
    row = ms_row(f"{clients} client(s), {n} requests", latencies)
    return [*row, f"{n / elapsed:.0f}", f"{cpu_us:.0f}", str(bad)]


async def measure_wrk(
    directory: Path, url: str, seconds: float, before: int
) -> tuple[list[str], int]:
    """The same load from wrk, ``before`` events being stored already:
    (row, requests wrk repeated because it ran out)."""
    run = await signed_wrk(url, directory, seconds, "wrk", time.process_time)
    stored = stored_events(directory / "daemon") - before
    cells = [f"{CLIENTS} connections, wrk, {seconds:.0f} s", str(run.done)]
    cells += [f"{v:.2f}" for v in run.ms] + [f"{run.rate:.0f}", f"{run.cpu_us:.0f}"]
    # wrk counts completed requests; those in flight when it stopped are stored too.
    return [*cells, str(run.errors)], max(0, run.done - stored)


async def main(n: int, sync: str, log_level: str, wrk_seconds: float) -> None:
    with bench_directory(log_level) as directory:
        raw = [sqlite_rate(directory, 2000, 1), sqlite_rate(directory, 8000, CLIENTS)]
        settings = bench_settings(directory / "daemon", sync, log_level)
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            async with harness(settings) as h:
                url = h.running.url
                await measure(pool, url, 200, CLIENTS, "warmup")
                rows = [
                    await measure(pool, url, n // 4, 1, "seq"),
                    await measure(pool, url, n, CLIENTS, "conc"),
                ]
                stored = stored_events(directory / "daemon")
                notes = [f"events stored: {stored} of {200 + n // 4 + n} sent"]
                if wrk_seconds and wrk_available():
                    row, repeated = await measure_wrk(directory, url, wrk_seconds, stored)
                    rows.append(row)
                    if repeated:
                        notes.append(f"wrk ran out of requests and repeated {repeated}")
                elif wrk_seconds:
                    notes.append("wrk is not installed (apt-get install wrk): no cross-check row")
                report(rows, raw, notes, sync, log_level)


def report(
    rows: list[list[str]], raw: list[float], notes: list[str], sync: str, log_level: str
) -> None:
    print(
        f"webhook ingest: signed (Standard Webhooks), synchronous={sync.upper()}, "
        f"202 after commit, daemon logging at {log_level} to a file"
    )
    print_table([*LATENCY_HEADER, "req/s", "daemon CPU us/req", "non-202"], rows)
    print("\n".join(notes))
    print(
        f"baseline, raw SQLite (WAL, synchronous=FULL) in this run: {raw[0]:.0f} rows/s "
        f"at 1 row per commit, {raw[1]:.0f} rows/s at {CLIENTS} rows per commit"
    )
    print("target: >= 1800 req/s and p99 <= 30 ms with 16 concurrent keep-alive clients")


if __name__ == "__main__":
    parser = iterations_parser(__doc__ or "", default_n=8000)
    parser.add_argument("--synchronous", default="full", choices=["full", "normal"])
    default_level = DaemonSection.model_fields["log_level"].default
    parser.add_argument(
        "--log-level",
        default=default_level,
        choices=["debug", "info", "warning", "error"],
        help=f"the daemon's log level (default: the daemon's own default, {default_level})",
    )
    parser.add_argument(
        "--wrk-seconds",
        type=float,
        default=5,
        help="length of the wrk cross-check (16 connections), if wrk is installed; 0: skip",
    )
    args = parser.parse_args()
    run_like_the_daemon(main, args.n, args.synchronous, args.log_level, args.wrk_seconds)
