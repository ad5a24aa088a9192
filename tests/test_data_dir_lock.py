"""One daemon per data_dir: the second refuses in one line, the first is untouched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, free_port, run_to_exit, write_config
from tests.fakes.model_server import FakeModelServer, Reply
from wakeful.kernel.data_dir_lock import LOCK_FILE, DataDirLocked, hold_data_dir_lock


def second_config(first: Path, port: int) -> Path:
    """The same configuration (so the same data_dir) on another port."""
    text = first.read_text()
    old_bind = next(line for line in text.splitlines() if line.startswith("bind = "))
    path = first.with_name("second.toml")
    path.write_text(text.replace(old_bind, f'bind = "127.0.0.1:{port}"'))
    return path


def test_second_daemon_refuses_and_first_is_untouched(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    port, other_port = free_port(), free_port()
    config = write_config(tmp_path, model_server.base_url, port)
    other = second_config(config, other_port)
    model_server.push(Reply(text="first answer"), Reply(text="second answer"))
    with DaemonProcess(config, port) as first:
        assert first.proc is not None
        first.send("hello")
        first.wait_for_log('"outcome": "ok"')
        before = first.trajectory()

        refused = run_to_exit(other)

        assert refused.returncode == 1
        output = refused.stdout + refused.stderr
        assert "Traceback" not in output
        # One JSON log line on stdout (the journal's structured copy), one plain line on stderr.
        errors = [line for line in refused.stdout.splitlines() if "cannot start" in line]
        assert len(errors) == 1, output
        assert refused.stderr.startswith("wakeful: cannot start: another wakeful (pid ")
        assert refused.stderr.count("\n") == 1, refused.stderr
        message = json.loads(errors[0])["error"]
        assert f"another wakeful (pid {first.proc.pid}" in message
        assert f"is running with data_dir {tmp_path}" in message
        assert "give this one its own [daemon] data_dir" in message
        # The refused daemon ran no recovery and wrote nothing: the first goes on.
        assert first.trajectory() == before
        assert len(model_server.requests) == 1
        first.send("again")
        first.wait_for_log('"outcome": "ok"', count=2)
        assert [m.get("content") for m in first.trajectory()][-1] == "second answer"
        first.kill()  # SIGKILL: no cleanup runs, the kernel drops the lock

    lock_note = json.loads((tmp_path / LOCK_FILE).read_text())
    assert lock_note["pid"] == first.proc.pid  # a stale note with a dead pid is left …
    with DaemonProcess(other, other_port) as successor:  # … and is no obstacle
        assert successor.proc is not None
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == successor.proc.pid
        assert [m.get("content") for m in successor.trajectory()][-1] == "second answer"
        assert successor.stop() == 0


def test_lock_is_exclusive_within_one_process_and_released_on_exit(tmp_path: Path) -> None:
    refusal = r"another wakeful \(pid \d+ on "
    with hold_data_dir_lock(tmp_path), pytest.raises(DataDirLocked, match=refusal):
        hold_data_dir_lock(tmp_path).__enter__()
    assert (tmp_path / LOCK_FILE).read_text() == ""  # nobody holds it: no pid to blame
    with hold_data_dir_lock(tmp_path):
        pass


def test_client_commands_do_not_take_the_lock(tmp_path: Path) -> None:
    """`wakeful status` against a data_dir whose daemon holds the lock still runs."""
    port = free_port()
    config = write_config(tmp_path, None, port)
    with DaemonProcess(config, port):
        status = subprocess.run(
            [sys.executable, "-m", "wakeful", "-c", str(config), "status"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert status.returncode == 0, status.stdout + status.stderr
    assert "another wakeful" not in status.stdout + status.stderr
