"""A config timer survives SIGKILL of a real `wakeful run` and fires once after restart.

That it never fires again on later starts is tested in-process (test_timers.py).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer


def timer_events(daemon: DaemonProcess) -> list[dict[str, Any]]:
    with daemon.client() as client:
        events: list[dict[str, Any]] = client.get("/api/events").json()["events"]
    return [e for e in events if e["kind"] == "timer.trigger"]


def test_timer_due_while_killed_fires_once_after_restart(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Stored by a daemon that is SIGKILLed, the run due meanwhile fires once on the next start."""
    # Late enough that even a slow first start (a loaded machine) is over by then.
    due = datetime.now(UTC) + timedelta(seconds=10)
    port = free_port()
    config = write_config(tmp_path, model_server.base_url, port)
    config.write_text(
        config.read_text()
        + f'[[timers]]\nname = "once"\nat = "{due.isoformat()}"\nmessage = "wake up"\n'
        + "[scheduler]\nmisfire_grace_s = 60\n"
    )
    with DaemonProcess(config, port) as first:
        assert datetime.now(UTC) < due - timedelta(seconds=0.5), "the first start was too slow"
        first.kill()
    # The run must fall due while no daemon runs: that takes wall-clock time.
    time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 0.3)
    with DaemonProcess(config, port) as second:
        second.wait_for_log("timer fired", timeout_s=10)
        fired = timer_events(second)
        assert second.stop() == 0
    assert [e["id"] for e in fired] == [
        f"timer:config:once:{due.astimezone(UTC):%Y-%m-%dT%H:%M:%S.%fZ}"
    ]
