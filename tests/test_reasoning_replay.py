"""Rule 1 completely: reasoning is recorded as the provider returned it and
replayed in the shape each endpoint needs (the fake server enforces the shape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.app.config import Settings
from wakeful.core.reasoning import wire_messages
from wakeful.llm import ModelRequest, OpenAIProvider

pytestmark = pytest.mark.anyio

TIME_CALL = ToolCallSpec("get_time", {}, id="call_t1")
DETAILS = [
    {"type": "reasoning.text", "text": "Check the clock.", "signature": "sig-1", "format": "x"},
    {"type": "reasoning.encrypted", "data": "opaque-blob", "format": "x"},
]
DEEPSEEK_TURNS = (
    Reply(reasoning="I need the clock.", tool_calls=[TIME_CALL]),
    Reply(reasoning="Now answer.", text="It is noon."),
    Reply(reasoning="Say goodbye.", text="bye"),
)


async def stored_after_two_turns(
    settings: Settings, model_server: FakeModelServer, *replies: Reply
) -> list[dict[str, Any]]:
    """Turn 1: a tool call and its answer; turn 2: one more question. Returns the
    stored assistant messages."""
    model_server.push(*replies)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("what time is it?")
        await feed.wait_for(lambda i: i["type"] == "reply")
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        await h.send("thanks")
        await feed.wait_for(lambda i: i["type"] == "reply" and i["text"] == "bye")
        return assistants(await h.trajectory())


def assistants(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "assistant"]


async def test_deepseek_gets_reasoning_back_with_tool_calls_only(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """auto: reasoning_content goes back on the tool-call turn and nowhere else,
    on every later request too; the trajectory keeps all of it."""
    model_server.reasoning_rules = "deepseek"
    settings = daemon_settings(tmp_path, model_server.base_url)
    stored = await stored_after_two_turns(settings, model_server, *DEEPSEEK_TURNS)
    assert [m["reasoning"]["text"] for m in stored] == [
        "I need the clock.",
        "Now answer.",
        "Say goodbye.",
    ]
    assert stored[0]["reasoning"] == {
        "text": "I need the clock.",
        "format": "reasoning_content",
        "model": "fake-model",
    }
    for request in model_server.requests[1:]:
        sent = assistants(request.body["messages"])
        assert sent[0]["reasoning_content"] == "I need the clock."
        assert all("reasoning_content" not in m for m in sent[1:])
    assert model_server.violations == []


async def test_vanilla_openai_gets_no_reasoning_fields(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """never: an endpoint that accepts no reasoning field is sent none; the
    trajectory still has it."""
    settings = daemon_settings(tmp_path, model_server.base_url, llm={"replay_reasoning": "never"})
    stored = await stored_after_two_turns(settings, model_server, *DEEPSEEK_TURNS)
    assert stored[0]["reasoning"]["text"] == "I need the clock."
    assert len(model_server.requests) == 3
    assert model_server.violations == []  # the "openai" rules: no reasoning field at all


async def test_reasoning_of_another_model_is_not_replayed(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """auto: after the configured model changes, the old model's reasoning stays
    stored but is not sent to the new one (a vanilla endpoint would reject it)."""
    model_server.reasoning_rules = "deepseek"
    settings = daemon_settings(tmp_path, model_server.base_url)
    await stored_after_two_turns(settings, model_server, *DEEPSEEK_TURNS)
    model_server.reasoning_rules = "openai"
    other = daemon_settings(tmp_path, model_server.base_url, llm={"model": "other-model"})
    async with harness(other) as h, watch_feed(h) as feed:
        model_server.push(Reply(text="still here"))
        await h.send("are you there?")
        await feed.wait_for(lambda i: i["type"] == "reply")
        stored = assistants(await h.trajectory())
    assert stored[0]["reasoning"]["model"] == "fake-model"
    assert "reasoning_content" not in assistants(model_server.requests[-1].body["messages"])[0]
    assert model_server.requests[-1].body["model"] == "other-model"
    assert model_server.violations == []


async def test_openrouter_details_are_collected_and_replayed_whole(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """always: `reasoning` text and `reasoning_details` (signature, encrypted
    data) are stored as streamed and sent back as the details on every turn."""
    model_server.reasoning_rules = "openrouter"
    settings = daemon_settings(tmp_path, model_server.base_url, llm={"replay_reasoning": "always"})
    stored = await stored_after_two_turns(
        settings,
        model_server,
        Reply(
            reasoning="Clock.",
            reasoning_field="reasoning",
            reasoning_details=DETAILS,
            tool_calls=[TIME_CALL],
        ),
        Reply(text="It is noon.", reasoning="Noon.", reasoning_field="reasoning"),
        Reply(text="bye"),
    )
    first = stored[0]["reasoning"]
    assert (first["text"], first["format"]) == ("Clock.", "reasoning")
    assert first["details"] == [{**detail, "index": i} for i, detail in enumerate(DETAILS)]
    last_request = assistants(model_server.requests[-1].body["messages"])
    assert last_request[0]["reasoning_details"] == first["details"]
    assert last_request[1]["reasoning"] == "Noon."  # always: plain turns too
    assert model_server.violations == []


async def test_provider_strips_stored_reasoning_by_default(
    model_server: FakeModelServer,
) -> None:
    """The stored field never goes on the wire; plain turns carry nothing."""
    stored = {"text": "t", "format": "reasoning_content", "model": "fake-model"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning": stored},
        {"role": "user", "content": "again"},
    ]
    provider = OpenAIProvider(model_server.base_url, "k", "fake-model", max_retries=0)
    try:
        await provider.complete(ModelRequest(messages=messages))
    finally:
        await provider.aclose()
    assert model_server.requests[0].body["messages"][1] == {"role": "assistant", "content": "hello"}
    assert messages[1]["reasoning"] == stored  # the caller's trajectory is not touched


def test_messages_without_reasoning_are_passed_on_as_they_are() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    assert wire_messages(messages, "always", "m") is messages


def test_anthropic_thinking_is_never_sent_to_an_openai_endpoint() -> None:
    """After a switch to provider = "openai", stored thinking blocks stay off the wire."""
    thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
    stored = {"text": "t", "format": "anthropic", "model": "m", "details": [thinking]}
    call = {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call], "reasoning": stored},
    ]
    for policy in ("auto", "always"):
        sent = wire_messages(messages, policy, "m")
        assert sent[1] == {"role": "assistant", "content": None, "tool_calls": [call]}
