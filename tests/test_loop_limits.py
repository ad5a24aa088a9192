"""What the loop does when the model is down or a run hits its limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec

pytestmark = pytest.mark.anyio


async def test_model_down_keeps_events_and_recovers(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A failing endpoint raises a clear alert, loses nothing, and the next event resumes."""
    model_server.push(*[Reply(status=500, error_message="upstream exploded")] * 3)
    model_server.push(Reply(text="Back again: answering both."))
    settings = daemon_settings(
        tmp_path, model_server.base_url, loop={"max_consecutive_failures": 3}
    )
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("first question")
        stopped = await feed.wait_for(lambda i: "run stopped" in i.get("text", ""))
        assert "failed 3 times in a row" in stopped["text"]
        alerts = [i for i in feed.items if i["type"] == "alert"]
        assert any("model call failed" in a["text"] and "500" in a["text"] for a in alerts)
        await h.send("second question")
        await feed.wait_for(lambda i: i.get("text") == "Back again: answering both.")
        messages = await h.trajectory()
    assert [m["role"] for m in messages] == ["user", "user", "assistant"]
    assert messages[0]["content"].endswith("first question")
    assert messages[1]["content"].endswith("second question")
    assert len(model_server.requests) == 4


async def test_model_call_limit_stops_the_run(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A model that never stops calling tools is stopped at the configured call limit."""
    model_server.responder = lambda body: Reply(tool_calls=[ToolCallSpec("get_time")])
    settings = daemon_settings(tmp_path, model_server.base_url, loop={"max_model_calls_per_run": 4})
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("loop forever")
        stopped = await feed.wait_for(lambda i: "run stopped" in i.get("text", ""))
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
    assert "max_model_calls_per_run = 4" in stopped["text"]
    assert len(model_server.requests) == 4
