"""A background shell task across a SIGKILL of the real daemon: reported lost, group stopped."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.processes import group_members, wait_for_pgid
from tests.trajectory_validator import validate_both

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def wait_for_trajectory(
    daemon: DaemonProcess, done: Any, timeout_s: float = 20.0
) -> list[dict[str, Any]]:
    """Until `done(messages)`; the trajectory is only readable over HTTP, so poll it, bounded."""
    deadline = time.monotonic() + timeout_s
    while True:
        messages = daemon.trajectory()
        if done(messages):
            return messages
        if time.monotonic() > deadline:
            raise TimeoutError(f"trajectory not as expected after {timeout_s} s: {messages}")
        time.sleep(0.05)


def test_task_running_at_sigkill_is_reported_lost(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """After a SIGKILL restart the running task is reported lost and its orphan group stopped."""
    port = free_port()
    marker = f"wakeful-shell-restart-{uuid.uuid4().hex}"
    config = write_config(tmp_path, model_server.base_url, port)
    command = f"echo 'indexing 40%'; sleep 600; echo {marker}"
    model_server.push(Reply(tool_calls=[ToolCallSpec("start_shell", {"command": command})]))
    model_server.responder = lambda _body: Reply(text="Noted.")
    pgid = None
    try:
        with DaemonProcess(config, port) as daemon:
            daemon.send("index the archive in the background")
            pgid = wait_for_pgid(marker)
            wait_for_trajectory(
                daemon, lambda m: m[-1] == {"role": "assistant", "content": "Noted."}
            )
            daemon.kill()
        assert group_members(pgid) != []  # the orphan outlived the daemon
        with DaemonProcess(config, port) as daemon:
            daemon.wait_for_log("shell tasks from before the restart reported")
            messages = wait_for_trajectory(
                daemon, lambda m: len(m) == 6 and m[-1]["role"] == "assistant"
            )
            with daemon.client() as client:
                tasks = client.get("/api/status").json()["sessions"]["main"]["tasks"]
            assert daemon.stop() == 0
        assert group_members(pgid) == []
    finally:
        if pgid is not None and group_members(pgid):
            os.killpg(pgid, signal.SIGKILL)
    lost = messages[4]["content"]
    assert messages[4]["role"] == "user" and "was lost: the daemon restarted while it ran" in lost
    assert "still running after the restart and has been stopped" in lost
    assert "indexing 40%" in lost
    [shell] = [t for t in tasks if t.get("kind") == "shell"]
    assert shell["state"] == "lost" and shell["last_lines"] == ["indexing 40%"]
    validate_both(messages)
