"""A real `wakeful run` child's log: JSON on every line, context on event lines, no secrets."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest

from tests.daemon_harness import ADMIN_TOKEN
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec

API_KEY = "sk-test-apikey-5f1d9c0b7a2e"
HOOK_SECRET = "hook-bearer-secret-8c3e1f"
SECRETS = (ADMIN_TOKEN, API_KEY, HOOK_SECRET)


def _config(tmp_path: Path, model_url: str, port: int) -> Path:
    path = write_config(tmp_path, model_url, port)
    text = path.read_text().replace("[llm]\n", f'[llm]\napi_key = "{API_KEY}"\n')
    hook = f'[[hooks]]\nname = "ci"\nauth = "bearer"\nsecret = "{HOOK_SECRET}"\nsession = "ci"\n'
    path.write_text(text + hook)
    return path


def _exercise(daemon: DaemonProcess, model_server: FakeModelServer) -> None:
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": "echo done"})]),
        Reply(text="All done."),
        Reply(text="Noted the CI run."),
    )
    daemon.send("run echo please")
    daemon.wait_for_log('"outcome": "ok"', count=2)
    with httpx.Client(base_url=daemon.url, timeout=10) as client:
        hook = client.post(
            "/hooks/ci",
            json={"status": "green"},
            headers={"Authorization": f"Bearer {HOOK_SECRET}", "webhook-id": "delivery-1"},
        )
        assert hook.status_code == 202, hook.text
        bad = client.post("/api/messages", json={"text": "x"}, headers={"Authorization": "no"})
        assert bad.status_code == 401
        params = {"token": ADMIN_TOKEN}
        assert client.get("/api/sessions/main/events", params=params).status_code in (200, 401)
        assert client.get("/metrics").status_code == 200
        assert client.get("/readyz").status_code == 200
    daemon.wait_for_log('"outcome": "ok"', count=3)
    assert daemon.proc is not None
    text = daemon.config.read_text().replace('log_level = "info"', 'log_level = "debug"')
    daemon.config.write_text(text.replace("bind = ", 'bind = "127.0.0.1:1" #'))
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_log("configuration reloaded")


def test_log_lines_are_json_with_context_and_no_secrets(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Every line parses as JSON, event lines carry event_id/session/run_id, no secret leaks."""
    port = free_port()
    with DaemonProcess(_config(tmp_path, model_server.base_url, port), port) as daemon:
        _exercise(daemon, model_server)
        assert daemon.stop() == 0
        lines = list(daemon.lines)
    records = [json.loads(line) for line in lines]  # raises on any non-JSON line
    for secret in SECRETS:
        assert not any(secret in line for line in lines), "a secret reached the log"
    assert model_server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    routed = [r for r in records if r["event"] == "event routed"]
    assert len(routed) == 2 and {r["session"] for r in routed} == {"main", "ci"}
    assert all(r["event_id"] and r["kind"] and r["strategy"] and r["reason"] for r in routed)
    reload = next(r for r in records if r["event"] == "configuration reloaded")
    assert reload["applied"] == ["daemon.log_level"]
    assert reload["needs_restart"] == ["server.bind"]
    calls = [r for r in records if r["event"] == "model call"]
    assert len(calls) == 3
    for call in calls:
        assert call["session"] and call["run_id"] and call["event_id"]
        assert {"latency_ms", "tokens_in", "tokens_out", "cached_tokens"} <= call.keys()


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
