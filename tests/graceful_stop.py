"""One SIGTERM cycle against a real `wakeful run` child, shared by fast and slow tests."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.daemon_harness import ADMIN_TOKEN
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.processes import group_members, wait_for_pgid
from tests.trajectory_validator import validate_both

STOP_TIMEOUT_S = 2.0  # [daemon] stop_timeout_s for these tests
EXIT_MARGIN_S = 3.0  # forced cleanup + teardown must fit in this on top of the bound


@dataclass
class StopOutcome:
    exit_code: int
    stop_s: float  # SIGTERM → exit
    messages: list[dict[str, Any]]
    statuses: dict[str, str]  # event id → status
    refused: httpx.Response | None  # a message posted while draining (None: already gone)
    log_tail: list[str]  # for the failure message


def read_db(data_dir: Path, session: str = "main") -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The trajectory and event statuses straight from the store file."""
    with sqlite3.connect(data_dir / "wakeful.db") as conn:
        rows = conn.execute(
            "SELECT body FROM messages WHERE session = ? ORDER BY seq", (session,)
        ).fetchall()
        statuses = dict(conn.execute("SELECT id, status FROM events").fetchall())
    return [json.loads(body) for (body,) in rows], statuses


def run_stop_cycle(data_dir: Path, server: FakeModelServer, during: str) -> StopOutcome:
    """Start, make the session busy (``stream``, ``tool`` or ``short-stream``), queue a
    second message, SIGTERM, and report how the daemon stopped."""
    port = free_port()
    config = write_config(data_dir, server.base_url, port)
    marker = f"wakeful-stop-{uuid.uuid4().hex}"
    if during == "tool":
        command = f"sleep 600; echo {marker}"
        server.push(Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})]))
    elif during == "stream":
        server.push(Reply(text="PARTIAL " * 50, token_delay_s=0.02, hang=True))
    else:
        # Still streaming when SIGTERM lands, yet done well within the bound.
        server.push(Reply(text="whole " * 10, first_token_delay_s=0.6, token_delay_s=0.02))
    pgid = None
    seen = len(server.requests)
    with DaemonProcess(config, port) as daemon:
        daemon.send("do the long thing")
        server.wait_for_requests(seen + 1, timeout_s=10)
        if during == "tool":
            pgid = wait_for_pgid(marker)
        daemon.send("and one more thing")  # queued: the session is busy
        assert daemon.proc is not None
        started = time.monotonic()
        daemon.proc.terminate()
        refused = _post_until_refused(daemon.url)
        code = daemon.proc.wait(timeout=STOP_TIMEOUT_S + EXIT_MARGIN_S + 5)
        stop_s = time.monotonic() - started
        log_tail = daemon.lines[-15:]
    if pgid is not None:
        assert group_members(pgid) == [], "the tool's process group outlived the daemon"
    messages, statuses = read_db(data_dir)
    validate_both(messages)
    return StopOutcome(code, stop_s, messages, statuses, refused, log_tail)


def _post_until_refused(url: str, timeout_s: float = 5.0) -> httpx.Response | None:
    """SIGTERM is asynchronous: post until the daemon says it is stopping (or is gone)."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    deadline = time.monotonic() + timeout_s
    with httpx.Client(base_url=url, headers=headers, timeout=5) as client:
        while True:
            try:
                response = client.post("/api/messages", json={"text": "late"})
            except httpx.TransportError:
                return None  # it stopped before we caught it draining
            if response.status_code != 202 or time.monotonic() > deadline:
                return response
            time.sleep(0.01)  # no event tells us when the signal was handled
