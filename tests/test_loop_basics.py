"""The agent loop end to end: HTTP in, streamed model call, reply out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec

pytestmark = pytest.mark.anyio


async def test_message_gets_a_reply(tmp_path: Path, model_server: FakeModelServer) -> None:
    """A user message reaches the model once and its answer reaches the user."""
    model_server.push(Reply(text="Hello there"))
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        async with watch_feed(h) as feed:
            await h.send("hi")
            reply = await feed.wait_for(lambda i: i["type"] == "reply")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        assert reply["text"] == "Hello there"
        messages = await h.trajectory()
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "The user says: hi" not in messages[0]["content"]  # a single event has no marker
    assert messages[0]["content"].endswith("hi")
    assert len(model_server.requests) == 1


async def test_tool_call_result_is_recorded(tmp_path: Path, model_server: FakeModelServer) -> None:
    """A tool call runs, its result is recorded, and the model is called again."""
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": "echo forty-two"})]),
        Reply(text="The answer is forty-two."),
    )
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        async with watch_feed(h) as feed:
            await h.send("run echo")
            await feed.wait_for(lambda i: i["type"] == "reply")
        messages = await h.trajectory()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert "forty-two" in messages[2]["content"]
    second = model_server.requests[1].body["messages"]
    assert second[-1]["content"].startswith("[Agent status")
    assert any(m["role"] == "tool" and "forty-two" in m["content"] for m in second)
