"""Model health in the status, an API key refused (not retried, one alert), and the
start-up warning for a configured model with no key."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply
from wakeful.app.config import LlmSection
from wakeful.app.startup.resources import make_provider
from wakeful.core.loop.model_health import ModelHealth
from wakeful.llm.model_key import missing_key_warning
from wakeful.store.base import ModelCallRecord

pytestmark = pytest.mark.anyio


async def test_refused_key_stops_the_run_at_once_with_one_alert(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 401 is asked once (no SDK retry, no loop retry); one alert names where the key
    comes from; the status's model health counts it and shows the error."""
    monkeypatch.setenv("MY_MODEL_KEY", "sk-wrong")
    model_server.push(*[Reply(status=401, error_message="Incorrect API key")] * 4)
    settings = daemon_settings(
        tmp_path,
        model_server.base_url,
        llm={"max_retries": 2, "api_key_env": "MY_MODEL_KEY"},
        loop={"max_consecutive_failures": 3},
    )
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("hello")
        await feed.wait_for(lambda i: i.get("type") == "run" and i.get("state") == "idle")
        status = (await h.client.get("/api/status")).json()
    alerts = [i["text"] for i in feed.items if i["type"] == "alert"]
    assert len(alerts) == 1, alerts
    assert alerts[0].startswith("run stopped: ")
    assert "refused the API key (HTTP 401)" in alerts[0]
    assert "MY_MODEL_KEY ([llm] api_key_env)" in alerts[0] and "sk-wrong" not in alerts[0]
    assert len(model_server.requests) == 1
    health = status["model"]["health"]
    assert health["state"] == "failing" and health["key_refused"] == 1
    assert "refused the API key" in health["last_error"]
    assert health["last_success"] == "never" and "UTC" in health["failing_since"]


async def test_health_recovers_on_success(tmp_path: Path, model_server: FakeModelServer) -> None:
    """After a failure and then a success: ok, the success's time, the last error kept."""
    model_server.push(Reply(status=500, error_message="upstream exploded"), Reply(text="hi"))
    settings = daemon_settings(tmp_path, model_server.base_url)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("hello")
        await feed.wait_for(lambda i: i.get("type") == "run" and i.get("state") == "idle")
        health = (await h.client.get("/api/status")).json()["model"]["health"]
    assert health["state"] == "ok" and "UTC" in health["last_success"]
    assert "failing_since" not in health and "upstream exploded" in health["last_error"]


def test_model_health_tracks_failing_since_the_first_failure() -> None:
    health = ModelHealth()

    def call(outcome: str, at: float) -> None:
        record = ModelCallRecord("main", "r", "m", 0.1, 0, 0, 0, None, outcome)
        health.record(record, now=at)

    call("error: down", 100.0)
    call("interrupted", 150.0)
    call("error: still down", 200.0)
    assert (health.failing_since, health.failures_in_a_row) == (100.0, 2)
    assert health.last_error == "still down"
    call("ok", 300.0)
    assert (health.failing_since, health.last_success_at) == (None, 300.0)


@pytest.mark.parametrize(
    ("base_url", "warned"),
    [
        ("https://api.openai.com/v1", True),
        ("http://127.0.0.1:8080/v1", False),
        ("http://localhost:11434/v1", False),
        ("http://[::1]:8000/v1", False),
        ("http://10.0.0.5:8000/v1", True),
    ],
)
def test_missing_key_is_warned_at_start_unless_the_server_is_local(
    base_url: str, warned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model with no key: one warning naming the env var, not for a loopback server."""
    monkeypatch.delenv("SOME_KEY_VAR", raising=False)
    llm = LlmSection(model="gpt-x", base_url=base_url, api_key_env="SOME_KEY_VAR")
    with capture_logs() as logs:
        make_provider(llm, None)
    warnings = [entry["event"] for entry in logs if entry["log_level"] == "warning"]
    assert len(warnings) == (1 if warned else 0)
    if warned:
        assert "SOME_KEY_VAR" in warnings[0] and "loopback" in warnings[0]
    assert missing_key_warning(llm, "sk-given") is None
    assert missing_key_warning(LlmSection(model=""), None) is None


async def test_a_remote_model_without_a_key_is_not_ok_in_the_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status said "health: ok" for a model that cannot answer (issue 25): with no
    key for a remote server it says "no key" and why, until a call succeeds. The host
    is never asked (nothing is sent: the test makes no message)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = daemon_settings(tmp_path, "https://models.example.test/v1")
    async with harness(settings) as h:
        health = (await h.client.get("/api/status")).json()["model"]["health"]
    assert health["state"] == "no key", health
    assert "no API key for [llm] model 'fake-model'" in health["warning"]


def test_a_success_clears_the_no_key_state() -> None:
    """A proxy may take no key after all: the first good call makes the state ok."""
    health = ModelHealth(warning="no API key for [llm] model 'm'")
    assert health.describe()["state"] == "no key"
    health.record(ModelCallRecord("main", "r", "m", 0.1, 1, 1, 0, "stop", "ok"))
    assert health.describe()["state"] == "ok" and "warning" not in health.describe()
