"""A real `wakeful run` killed after a parent's stop was stored and routed but before
its children were cancelled (the stop reaches the subagents from the in-memory feed):
after the restart the children are cancelled all the same, from the stored decision,
and none of them calls the model again."""

from __future__ import annotations

import os
import signal
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer
from tests.subagent_model import ASK, CHILD_MARK, DelegatingModel, conversation
from tests.test_subagents_restart import wait_for


def is_child(body: dict[str, Any]) -> bool:
    return CHILD_MARK in str(conversation(body)[0].get("content"))


def status(daemon: DaemonProcess) -> dict[str, Any]:
    with daemon.client() as client:
        found: dict[str, Any] = client.get("/api/status").json()
    return found


def nothing_pending(daemon: DaemonProcess, session: str) -> bool:
    with daemon.client() as client:
        log = client.get(f"/api/sessions/{session}/events").json()["events"]
    return all(e["status"] == "consumed" for e in log)


def answered_after(daemon: DaemonProcess, text: str) -> bool:
    main = daemon.trajectory()
    asked = [i for i, m in enumerate(main) if text in str(m.get("content") or "")]
    return bool(asked) and any(m["role"] == "assistant" for m in main[asked[-1] :])


def test_a_crash_between_the_stop_and_the_cancelling_still_cancels_the_children(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    config = write_config(data_dir, model_server.base_url, port)
    workspace = data_dir / "workspace"
    model_server.responder = DelegatingModel(
        letters="AB", command="echo $$ > pgid-{x}; sleep 30; echo out-{x}"
    )
    pgid_files = [workspace / f"pgid-{x}" for x in "AB"]
    try:
        with DaemonProcess(config, port, module="tests.subagent_stop_crash") as daemon:
            daemon.send(ASK)
            wait_for(
                lambda: all(p.exists() and p.read_text().strip() for p in pgid_files),
                "the children's commands did not start",
            )
            with daemon.client() as client:
                sent = client.post(
                    "/api/messages",
                    json={"session": "main", "text": "stop everything", "kind": "user.interrupt"},
                )
            assert sent.status_code == 202, sent.text
            daemon.wait_for_log("killed at the stop")
            assert daemon.proc is not None and daemon.proc.wait(timeout=10) == -signal.SIGKILL
        restarted_at = len(model_server.requests)
        with DaemonProcess(config, port) as daemon:
            wait_for(lambda: answered_after(daemon, "stop everything"), "the stop went unanswered")
            children = [
                t
                for t in status(daemon)["sessions"]["main"]["tasks"]
                if t.get("kind") == "subagent"
            ]
            assert [t["state"] for t in children] == ["cancelled", "cancelled"]
            assert all(t["reason"] == "its parent main was told to stop" for t in children)
            time.sleep(0.5)  # a closed child must not call the model again: give it the chance
            after = [r for r in model_server.requests[restarted_at:] if is_child(r.body)]
            assert after == []
            sessions = [child["session"] for child in children]
            wait_for(
                lambda: all(nothing_pending(daemon, s) for s in sessions),
                "a cancelled child kept events pending",
            )
            assert daemon.stop() == 0
        assert model_server.violations == []
    finally:
        # The first daemon died without stopping its children's commands (no sandbox
        # here to end them with it): end what is left of them.
        for path in pgid_files:
            with suppress(ValueError, OSError):
                os.killpg(int(path.read_text()), signal.SIGKILL)
