"""A fleet on one Redis: signed webhook ingest with 1, 2 and 3 daemons, and failover time.

Ingest: real `wakeful run` processes without a model (nothing but ingest uses the
CPU), 16 keep-alive clients from separate load processes (one per daemon), spread
round-robin over the daemons. Next to them, in the same run: the SQLite single
daemon, and a single Redis daemon without the fleet (same store, no stream entry, no
prefix sharing). Twice: every webhook to one session (one hook), and spread over
``--sessions`` sessions (one hook each, ``session = "hN"``; each client sends to
each hook in turn), so each daemon owns a share of the sessions. Each row gives the
CPU time per request of the daemons (all their processes), of Redis and of the load
processes, and how many cores were busy: with these three, and on the whole machine
(other users included, from /proc/stat): when the machine's figure is near the core
count, the machine and not the fleet is the limit.

Failover: three daemons with a fake model; a message to a session, its owner
found in `wakeful status`, then SIGKILL (or SIGTERM: the hand-over) of the
owner and at once another message to the session through a survivor. Measured:
from the signal until the next model request for that session arrives (from a
survivor). The bound to compare with: ``session_lease_ms`` + 1 s.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

import redis
from standardwebhooks.webhooks import Webhook

from bench.common import (
    CLOCK_TICKS,
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    percentile,
    print_table,
)
from bench.webhook_load import build_request, run_load
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_replies import Reply
from tests.fakes.model_server import FakeModelServer
from tests.fleet_daemons import send, session_of
from tests.redis_server import REDIS_URL, delete_prefix

SECRET = "whsec_" + base64.b64encode(b"bench-secret-32-bytes-long-abcde").decode()
CLIENTS = 16
LEASE_MS = 2000
CORES = os.cpu_count() or 1


def config(
    data_dir: Path, port: int, store: list[str], model_url: str | None = None, hooks: int = 1
) -> Path:
    path = write_config(data_dir, model_url, port)
    lines = ["[store]", *store]
    for name in hook_names(hooks):
        lines += ["[[hooks]]", f'name = "{name}"', f'secret = "{SECRET}"', 'template = "{type}"']
        lines += [f'session = "{name.replace("bench", "h")}"'] if hooks > 1 else []
    # log_level stays info (one "event routed" line per delivery, as in production).
    path.write_text(path.read_text() + "\n".join(lines) + "\n")
    return path


def hook_names(hooks: int) -> list[str]:
    """One hook (to the default session) or ``hooks`` hooks, one session each."""
    return ["bench"] if hooks == 1 else [f"bench{k}" for k in range(hooks)]


def redis_store(prefix: str, *, fleet: bool) -> list[str]:
    lines = ['backend = "redis"', f'redis_url = "{REDIS_URL}"', f'redis_prefix = "{prefix}"']
    if fleet:
        lines += ["fleet = true", f"session_lease_ms = {LEASE_MS}", f"claim_idle_ms = {LEASE_MS}"]
    return lines


def signed(port: int, tag: str, n: int, hooks: list[str] | None = None) -> list[bytes]:
    """``n`` signed deliveries, to each of ``hooks`` in turn."""
    signer, now = Webhook(SECRET), datetime.now(tz=UTC)
    names = hooks or ["bench"]
    out = []
    for i in range(n):
        body = json.dumps({"type": "build.finished", "data": {"i": i}})
        msg_id = f"{tag}-{i}"
        headers = {
            "content-type": "application/json",
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": signer.sign(msg_id, now, body),
        }
        path = f"/hooks/{names[i % len(names)]}"
        out.append(build_request("127.0.0.1", port, path, headers, body.encode()))
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime
    return total


def timed_load(
    host: str, port: int, per_client: list[list[bytes]]
) -> tuple[float, list[float], list[int], float]:
    """:func:`run_load`, and the CPU seconds this load process spent on it."""
    started = time.process_time()
    elapsed, latencies, statuses = run_load(host, port, per_client)
    return elapsed, latencies, statuses, time.process_time() - started


def measure_ingest(
    pool: ProcessPoolExecutor, name: str, daemons: list[DaemonProcess], n: int, hooks: int
) -> list[str]:
    ports = [int(d.url.rsplit(":", 1)[1]) for d in daemons]
    names = hook_names(hooks)
    per_client: list[list[bytes]] = [[] for _ in range(CLIENTS)]
    tag = uuid.uuid4().hex[:6]
    for c in range(CLIENTS):
        port = ports[c % len(ports)]
        per_client[c] = signed(port, f"{tag}-{c}", n // CLIENTS, names)
    warm = [signed(p, f"{tag}-warm-{p}", 50, names) for p in ports]
    pool.submit(run_load, "127.0.0.1", ports[0], warm[:1]).result()
    pids = [d.proc.pid for d in daemons if d.proc is not None]
    cpu_before, redis_before = cpu_seconds(pids), redis_cpu_seconds()
    machine_before, window_started = machine_busy_seconds(), time.perf_counter()
    # One load process per daemon; each of its clients connects to that daemon's port.
    futures = [
        pool.submit(timed_load, "127.0.0.1", port, [r for c, r in enumerate(per_client)
                                                    if ports[c % len(ports)] == port])
        for port in ports
    ]  # fmt: skip
    results = [f.result() for f in futures]
    machine_s = machine_busy_seconds() - machine_before
    window = time.perf_counter() - window_started  # the CPU figures' window: it all
    elapsed = max(r[0] for r in results)
    latencies = [lat for r in results for lat in r[1]]
    bad = sum(1 for r in results for s in r[2] if s != 202)
    sent = sum(len(reqs) for reqs in per_client)
    daemons_s = cpu_seconds(pids) - cpu_before
    redis_s = redis_cpu_seconds() - redis_before
    load_s = sum(r[3] for r in results)
    ours = (daemons_s + redis_s + load_s) / window
    us = [f"{seconds / sent * 1e6:.0f}" for seconds in (daemons_s, redis_s, load_s)]
    row = ms_row(name, latencies)
    busy = f"{ours:.2f} / {machine_s / window:.2f}"
    return [*row, f"{sent / elapsed:.0f}", *us, busy, str(bad)]


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle (every process, other users' too)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks[:8]) - idle) / CLOCK_TICKS


def redis_cpu_seconds() -> float:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        cpu = client.info("cpu")
    finally:
        client.close()
    return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])


SETUPS: list[tuple[str, int, str]] = [
    ("SQLite, 1 daemon", 1, "sqlite"),
    ("Redis, 1 daemon (no fleet)", 1, "redis"),
    ("Redis fleet, 1 daemon", 1, "fleet"),
    ("Redis fleet, 2 daemons", 2, "fleet"),
    ("Redis fleet, 3 daemons", 3, "fleet"),
]


def ingest_rows(directory: Path, n: int, hooks: int) -> list[list[str]]:
    context = multiprocessing.get_context("spawn")
    rows = []
    # As many load processes as daemons: a daemon is never waiting on a shared client.
    with ProcessPoolExecutor(3, mp_context=context) as pool:
        for name, count, kind in SETUPS:
            prefix = f"wakeful-bench:{uuid.uuid4().hex}:"
            with ExitStack() as stack:
                stack.callback(delete_prefix, prefix)
                daemons = []
                for i in range(count):
                    store = (
                        ['backend = "sqlite"']
                        if kind == "sqlite"
                        else redis_store(prefix, fleet=kind == "fleet")
                    )
                    port = free_port()
                    data_dir = directory / f"{kind}-{count}-{hooks}-{i}"
                    path = config(data_dir, port, store, hooks=hooks)
                    daemons.append(stack.enter_context(DaemonProcess(path, port)))
                rows.append(measure_ingest(pool, name, daemons, n, hooks))
    return rows


def owner_pid(daemon: DaemonProcess, session: str) -> int:
    with daemon.client() as client:
        status = client.get("/api/status").json()
    for row in status["fleet"]["daemons"].values():
        if session in row["sessions"]:
            return int(row["info"]["pid"])
    raise RuntimeError(f"no owner for {session}")


def failover_times(directory: Path, iterations: int, *, hand_over: bool) -> list[float]:
    prefix = f"wakeful-bench:{uuid.uuid4().hex}:"
    times = []
    with ExitStack() as stack, FakeModelServer() as model:
        stack.callback(delete_prefix, prefix)
        model.responder = lambda _body: Reply(text="ok")
        members: list[tuple[Path, int, DaemonProcess]] = []
        for i in range(3):
            port = free_port()
            path = config(directory / f"fo-{hand_over}-{i}", port, redis_store(prefix, fleet=True),
                          model.base_url)  # fmt: skip
            members.append((path, port, DaemonProcess(path, port).start(timeout_s=60)))
        stack.callback(_end_all, members)
        for k in range(iterations):
            session = f"s{k}"
            send(members[k % 3][2].url, session, f"[{session}] hello")
            wait_for_request(model, session, 0.0)
            pid = owner_pid(members[0][2], session)
            index = next(i for i, m in enumerate(members) if m[2].proc and m[2].proc.pid == pid)
            victim = members[index][2]
            survivor = members[(index + 1) % 3][2]
            started = time.monotonic()
            if hand_over:
                assert victim.proc is not None
                victim.proc.terminate()
            else:
                victim.kill()
            send(survivor.url, session, f"[{session}] after", timeout_s=10)
            times.append(wait_for_request(model, session, started) - started)
            if victim.proc is not None:
                victim.proc.wait(timeout=30)
            path, port, _ = members[index]
            members[index] = (path, port, DaemonProcess(path, port).start(timeout_s=60))
    return times


def _end_all(members: list[tuple[Path, int, DaemonProcess]]) -> None:
    for _path, _port, daemon in members:
        daemon.__exit__(None, None, None)


def wait_for_request(model: FakeModelServer, session: str, after: float) -> float:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for request in list(model.requests):
            if request.received_at > after and session_of(request) == session:
                return request.received_at
        time.sleep(0.005)  # the fake records requests in its own thread; polled finely
    raise TimeoutError(f"no model request for {session}")


def main(n: int, failovers: int, sessions: int) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    aof = client.config_get("appendonly").get("appendonly")
    client.close()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        header = [*LATENCY_HEADER, "req/s", "daemons' CPU us/req", "Redis CPU us/req"]
        header += ["load CPU us/req", f"cores busy: ours / machine (of {CORES})", "non-202"]
        for hooks, what in ((1, "one session"), (sessions, f"{sessions} sessions")):
            rows = ingest_rows(directory, n, hooks)
            print(f"\nfleet ingest, {what}: signed webhooks, {CLIENTS} keep-alive clients spread"
                  f" over the daemons, 202 after commit; Redis appendonly={aof}")  # fmt: skip
            print_table(header, rows)
            print(f"2 daemons / 1 (fleet): {ratio(rows, 3, 2)}; 3 / 1: {ratio(rows, 4, 2)}")
        if failovers == 0:
            return  # --failovers 0: the ingest tables only
        kill = failover_times(directory, failovers, hand_over=False)
        term = failover_times(directory, failovers, hand_over=True)
    print(f"\nsession failover, 3 daemons, session_lease_ms={LEASE_MS}: signal -> next model"
          " request for the session from a survivor")  # fmt: skip
    print_table(
        ["signal", "n", "p50 s", "p99 s", "max s"],
        [
            [name, str(len(t)), f"{percentile(t, 50):.2f}", f"{percentile(t, 99):.2f}",
             f"{max(t):.2f}"]
            for name, t in (("SIGKILL (lease lapses)", kill), ("SIGTERM (hand-over)", term))
        ],
    )  # fmt: skip
    print(f"bound: lease + 1 s = {LEASE_MS / 1000 + 1:.1f} s")


def ratio(rows: list[list[str]], a: int, b: int) -> str:
    """Row ``a``'s req/s over row ``b``'s."""
    column = len(LATENCY_HEADER)
    return f"{float(rows[a][column]) / float(rows[b][column]):.2f}x"


if __name__ == "__main__":
    parser = iterations_parser(__doc__ or "", default_n=4000)
    parser.add_argument(
        "--failovers", type=int, default=10, help="kills (and terms) measured; 0: none"
    )
    parser.add_argument("--sessions", type=int, default=12, help="sessions of the spread load")
    args = parser.parse_args()
    main(args.n, args.failovers, args.sessions)
