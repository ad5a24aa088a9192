"""Crash recovery: SIGKILL the daemon mid-stream and mid-tool, start it again."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.processes import wait_for_pgid
from tests.trajectory_validator import validate_both


def answered_after_start(config: Path, port: int) -> list[dict[str, Any]]:
    """Start the daemon, wait for its first answered model call, return the trajectory
    and stop it cleanly (exit 0)."""
    with DaemonProcess(config, port) as daemon:
        daemon.wait_for_log('"outcome": "ok"')
        messages = daemon.trajectory()
        assert daemon.stop() == 0
    return messages


def test_kill_mid_stream_then_resume(tmp_path: Path, model_server: FakeModelServer) -> None:
    """A reply being streamed when the daemon dies is never recorded; the restart answers."""
    port = free_port()
    config = write_config(tmp_path, model_server.base_url, port)
    model_server.push(Reply(text="HALF-WRITTEN " * 20, token_delay_s=0.02, hang=True))
    with DaemonProcess(config, port) as daemon:
        daemon.send("tell me a story")
        model_server.wait_for_requests(1)
        daemon.kill()
    model_server.push(Reply(text="Here is the story."))
    messages = answered_after_start(config, port)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"] == "Here is the story."
    assert not any("HALF-WRITTEN" in str(m) for m in messages)
    validate_both(messages)


def test_kill_mid_tool_then_resume(tmp_path: Path, model_server: FakeModelServer) -> None:
    """A tool running when the daemon dies gets one honest placeholder after the restart."""
    port = free_port()
    marker = f"wakeful-restart-{uuid.uuid4().hex}"
    config = write_config(tmp_path, model_server.base_url, port)
    command = f"sleep 600; echo {marker}"
    model_server.push(Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})]))
    pgid = None
    try:
        with DaemonProcess(config, port) as daemon:
            daemon.send("run the job")
            pgid = wait_for_pgid(marker)
            daemon.kill()
        model_server.push(Reply(text="The job was cut off by a restart; I will check it."))
        messages = answered_after_start(config, port)
    finally:
        if pgid is not None:
            os.killpg(pgid, signal.SIGKILL)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert "restarted while it ran" in messages[2]["content"]
    assert "may have partially executed" in messages[2]["content"]
    assert messages[2]["tool_call_id"] == messages[1]["tool_calls"][0]["id"]
    validate_both(messages)
    request = model_server.requests[-1].body["messages"]
    assert any(m.get("tool_call_id") == messages[2]["tool_call_id"] for m in request)


def test_events_wait_for_a_model(tmp_path: Path, model_server: FakeModelServer) -> None:
    """With no model configured, events are stored; once one is, they go in one batch."""
    port = free_port()
    with DaemonProcess(write_config(tmp_path, None, port), port) as daemon:
        ids = [daemon.send(text) for text in ("first", "second", "third")]
        with daemon.client() as client:
            status = client.get("/api/status").json()
        assert status["model"]["configured"] is False
        assert "WAKEFUL_LLM__MODEL" in status["model"]["how_to_configure"]
        assert daemon.stop() == 0
    model_server.push(Reply(text="Got all three."))
    messages = answered_after_start(write_config(tmp_path, model_server.base_url, port), port)
    assert len(model_server.requests) == 1
    assert [m["role"] for m in messages] == ["user", "user", "user", "assistant"]
    assert "There are 3 unprocessed events above: 3 user messages." in messages[2]["content"]
    assert len(set(ids)) == 3


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def test_promised_result_lost_to_a_kill_is_reported(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A placeholder's promised late result that a SIGKILL prevented arrives as "lost"."""
    port = free_port()
    marker = f"wakeful-promise-{uuid.uuid4().hex}"
    config = write_config(tmp_path, model_server.base_url, port)
    command = f"sleep 600; echo {marker}"
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})]),
        Reply(text="Understood, the job keeps running."),
    )
    pgid = None
    try:
        with DaemonProcess(config, port) as daemon:
            daemon.send("run the job")
            pgid = wait_for_pgid(marker)
            daemon.send("wait, I was wrong about the input")
            daemon.wait_for_log('"outcome": "ok"', count=2)
            daemon.kill()
        model_server.push(Reply(text="The job was lost in a crash; I will verify and rerun."))
        messages = answered_after_start(config, port)
    finally:
        if pgid is not None:
            os.killpg(pgid, signal.SIGKILL)
    call_id = messages[1]["tool_calls"][0]["id"]
    assert "will arrive later" in messages[2]["content"]
    late = [m for m in messages if "Late result from shell_exec" in str(m.get("content"))]
    assert len(late) == 1
    assert call_id in late[0]["content"] and "lost: the daemon was killed" in late[0]["content"]
    validate_both(messages)
