"""A real `wakeful run` SIGKILLed while three subagents run shell commands: after the
restart each child finishes, the parent integrates each result once, nothing is lost
and nothing doubles (every id below is counted in the store's event log)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer
from tests.subagent_model import ASK, DelegatingModel


def all_events(daemon: DaemonProcess) -> list[dict[str, Any]]:
    with daemon.client() as client:
        response = client.get("/api/events", params={"limit": 1000, "after": 0})
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events


def wait_for(probe: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def said(daemon: DaemonProcess, needle: str) -> bool:
    return any(needle in str(m.get("content") or "") for m in daemon.trajectory())


def test_sigkill_while_children_run_loses_nothing_and_doubles_nothing(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    config = write_config(data_dir, model_server.base_url, port)
    workspace = data_dir / "workspace"
    model_server.responder = DelegatingModel(command="touch started-{x}; sleep 3; echo out-{x}")
    with DaemonProcess(config, port) as daemon:
        daemon.send(ASK)
        wait_for(
            lambda: all((workspace / f"started-{x}").exists() for x in "ABC"),
            "the three children's commands did not start",
        )
        daemon.kill()  # mid-command, each child's shell_exec call unanswered
    with DaemonProcess(config, port) as daemon:
        wait_for(lambda: said(daemon, "ALL DONE: A B C"), "the parent did not integrate all three")
        events = all_events(daemon)
        main = daemon.trajectory()
        assert daemon.stop() == 0
    counts = Counter(e["id"] for e in events)
    assert [i for i, n in counts.items() if n > 1] == []
    tasks = [e for e in events if e["kind"] == "subagent.task"]
    results = [e for e in events if e["kind"] == "subagent.result"]
    assert len(tasks) == 3
    # One result per child: each child answered once, after its restart.
    assert sorted(e["id"].split(":")[1] for e in results) == sorted(
        e["id"].split(":")[1] for e in tasks
    )
    assert all(e["status"] == "consumed" for e in [*tasks, *results])
    shown = [m for m in main if "finished: found" in str(m.get("content") or "")]
    assert len(shown) == 3
    assert model_server.violations == []
