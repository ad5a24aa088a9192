"""Lifecycle under systemd: start → READY=1, SIGTERM → exit, recovery after SIGKILL.

Each `wakeful run` is a subprocess with ``NOTIFY_SOCKET`` pointing at a
datagram socket this script binds (it plays systemd), so "ready" means the
READY=1 datagram — sent after the store is open and the listener bound.

- ready, empty store: a fresh data directory.
- ready, 100k events: a store holding 100,000 consumed events and their
  trajectory messages, over 20 sessions.
- recovery after SIGKILL: the store as a SIGKILL leaves it — 10,000 events
  still pending (some mid-routing) over 100 sessions, each trajectory ending
  in a tool call with no result; start → READY, and READY → every session's
  first model request (the placeholders written, the batch sent).
- SIGTERM → exit 0 on an idle daemon.

Baselines in the same run: the bare interpreter (`python -c pass`), the
interpreter importing the daemon (`import wakeful.app.lifespan`), and SIGTERM →
exit of a minimal anyio process waiting on a signal receiver.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio

from bench.common import LATENCY_HEADER as HEADER
from bench.common import REPO_ROOT, FakeModelServer, iterations_parser, ms_row, print_table
from tests.daemon_process import free_port, write_config
from wakeful.kernel.events import user_message
from wakeful.store.sqlite import SqliteStore

SIGNAL_BASELINE = (
    "import anyio, signal\n"
    "async def main():\n"
    "    with anyio.open_signal_receiver(signal.SIGTERM) as s:\n"
    "        print('up', flush=True)\n"
    "        async for _ in s: return\n"
    "anyio.run(main)\n"
)


class Systemd:
    """The NOTIFY_SOCKET end: waits for one KEY=value datagram."""

    def __init__(self) -> None:
        self.address = f"@wakeful-bench-{uuid.uuid4().hex}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.address[1:])

    def wait_for(self, key: str, timeout_s: float = 60.0) -> float:
        self.sock.settimeout(timeout_s)
        while True:
            data = self.sock.recv(4096).decode()
            if any(line.startswith(f"{key}=") for line in data.splitlines()):
                return time.monotonic()


def spawn(config: Path, notify: Systemd) -> subprocess.Popen[bytes]:
    env = {**os.environ, "NOTIFY_SOCKET": notify.address}
    return subprocess.Popen(
        [sys.executable, "-m", "wakeful", "-c", str(config), "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=REPO_ROOT,
    )


def time_to_ready(config: Path) -> tuple[float, subprocess.Popen[bytes]]:
    notify = Systemd()
    started = time.monotonic()
    proc = spawn(config, notify)
    ready = notify.wait_for("READY")
    notify.sock.close()
    return ready - started, proc


def stop(proc: subprocess.Popen[bytes]) -> float:
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    if code != 0:
        raise RuntimeError(f"wakeful exited {code} on SIGTERM")
    return time.monotonic() - started


def interpreter(code: str) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)
    return time.monotonic() - started


def signal_baseline() -> float:
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGNAL_BASELINE], stdout=subprocess.PIPE, cwd=REPO_ROOT
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    return time.monotonic() - started


def fill(data_dir: Path, events: int, sessions: int, *, crashed: bool) -> None:
    """Write a store directly: consumed history, or the state a SIGKILL leaves."""
    data_dir.mkdir(parents=True, exist_ok=True)
    anyio.run(_create_schema, data_dir)
    body = json.loads(user_message("x", session="s").to_json())
    now = time.time()
    event_rows, message_rows = [], []
    for n in range(events):
        session = f"s{n % sessions}"
        event = {**body, "id": f"bench-{n}", "session": session}
        status = ("routing" if n % 10 == 0 else "pending") if crashed else "consumed"
        event_rows.append((event["id"], session, "user.input", json.dumps(event), status, now))
        if not crashed:
            message_rows.append((session, json.dumps({"role": "user", "content": f"m{n}"})))
    if crashed:
        for s in range(sessions):
            function = {"name": "shell_exec", "arguments": '{"command": "sleep 1"}'}
            call = {"id": f"call_{s}", "type": "function", "function": function}
            message_rows.append((f"s{s}", json.dumps({"role": "user", "content": "go"})))
            message_rows.append(
                (f"s{s}", json.dumps({"role": "assistant", "content": "", "tool_calls": [call]}))
            )
    with sqlite3.connect(data_dir / "wakeful.db") as conn:
        conn.executemany(
            "INSERT INTO events (id, session, kind, body, status, accepted_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            event_rows,
        )
        conn.executemany(
            "INSERT INTO messages (session, body, created_at) VALUES (?, ?, 0)", message_rows
        )


async def _create_schema(data_dir: Path) -> None:
    await (await SqliteStore(data_dir / "wakeful.db").open()).aclose()


def run(n: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="wakeful-bench-"))
    rows: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        rows.setdefault(name, []).append(value)

    with FakeModelServer() as server:
        empty = write_config(root / "empty", server.base_url, free_port())
        big = root / "big"
        fill(big, 100_000, 20, crashed=False)
        big_config = write_config(big, server.base_url, free_port())
        for _ in range(n):
            add("baseline: python -c pass", interpreter("pass"))
            add(
                "baseline: import wakeful.app.lifespan",
                interpreter("import wakeful.app.lifespan"),
            )
            add("baseline: SIGTERM -> exit, bare anyio", signal_baseline())
            ready_s, proc = time_to_ready(empty)
            add("start -> READY, empty store", ready_s)
            add("SIGTERM -> exit 0, idle", stop(proc))
            ready_s, proc = time_to_ready(big_config)
            add("start -> READY, 100k events", ready_s)
            stop(proc)
        for i in range(n):
            crashed = root / f"crashed-{i}"
            fill(crashed, 10_000, 100, crashed=True)
            config = write_config(crashed, server.base_url, free_port())
            seen = len(server.requests)
            ready_s, proc = time_to_ready(config)
            ready_at = time.monotonic()
            server.wait_for_requests(seen + 100, timeout_s=120)
            add("recovery: start -> READY, 10k pending", ready_s)
            add("recovery: READY -> 100 sessions' model calls", time.monotonic() - ready_at)
            stop(proc)
    print_table(HEADER, [ms_row(name, values) for name, values in rows.items()])


def main() -> None:
    args = iterations_parser(__doc__.split("\n\n")[0], default_n=5).parse_args()
    run(args.n)


if __name__ == "__main__":
    main()
