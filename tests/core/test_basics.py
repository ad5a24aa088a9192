"""A user message reaches the model, and what the model says is recorded and sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import build_core, calls, reply, tool_call
from tests.trajectory_validator import validate_openai

pytestmark = pytest.mark.anyio


async def test_a_message_reaches_the_model_and_its_reply_is_recorded(tmp_path: Path) -> None:
    async with build_core(tmp_path) as core:
        core.provider.script(reply("Hello there"))
        event_id = await core.send("hi")
        await core.settled()
        messages = await core.trajectory()
        (request,) = core.provider.requests
        assert core.channel.texts() == ["Hello there"]
        assert core.channel.delivered[0].answers == event_id
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"].endswith("] hi")  # a lone message: its time, then itself
    assert messages[1]["content"] == "Hello there"
    # The request: the system prompt, the history, and the status bar last.
    assert request.session == "main"
    assert request.messages[0]["role"] == "system"
    assert request.messages[1:-1] == messages[:1]
    assert request.messages[-1]["content"].startswith("[Agent status")
    tools = {t["function"]["name"] for t in request.tools}
    assert tools == {"echo", "block", "explode", "update_plan"}
    validate_openai(messages)


async def test_a_tool_result_is_recorded_and_the_model_called_again(tmp_path: Path) -> None:
    async with build_core(tmp_path) as core:
        call = tool_call("echo", {"text": "forty-two"})
        core.provider.script(calls(call), reply("The answer is forty-two."))
        await core.send("run echo")
        await core.settled()
        messages = await core.trajectory()
        first, second = core.provider.requests
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2] == {"role": "tool", "tool_call_id": call.id, "content": "echo: forty-two"}
    assert messages[1]["tool_calls"][0]["id"] == call.id
    # The second request carries the call and its result, then the status bar.
    assert second.messages[1:-1] == messages[:3]
    assert len(first.messages) == 3
    validate_openai(messages)
