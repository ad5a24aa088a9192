"""AnthropicProvider against the fake Messages API over real loopback HTTP."""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_replies import Reply, ToolCallSpec
from wakeful.app.config import LlmSection
from wakeful.app.startup.resources import make_provider
from wakeful.core.provider import (
    ContextTooLong,
    ModelKeyRefused,
    ModelRequest,
    ModelUnavailable,
    ProviderError,
    WireBody,
)
from wakeful.llm.anthropic_provider import AnthropicProvider

pytestmark = pytest.mark.anyio
MODEL = "claude-test"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The time.",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
        },
    }
]
START = [{"role": "system", "content": "You are wakeful."}, {"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def provider(server: FakeAnthropicServer, **options: Any) -> AnthropicProvider:
    options.setdefault("max_retries", 0)
    url = server.base_url
    return AnthropicProvider(api_key="sk-ant-test", model=MODEL, base_url=url, **options)


async def test_text_streams_to_on_delta(server: FakeAnthropicServer) -> None:
    server.push(Reply(text="hello there, friend"))
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    p = provider(server)
    response = await p.complete(ModelRequest(list(START), TOOLS), on_delta)
    await p.aclose()
    assert response.content == "hello there, friend"
    assert deltas == ["hello", " there,", " friend"]
    assert response.finish_reason == "stop" and response.tool_calls == ()
    assert server.violations == []
    wire = server.wire_bodies[0]
    assert wire["max_tokens"] == 8192 and wire["stream"] is True and "thinking" not in wire
    assert server.requests[0].headers["anthropic-version"]


async def test_tool_use_round_trip(server: FakeAnthropicServer) -> None:
    server.push(
        Reply(tool_calls=[ToolCallSpec("get_time", {"zone": "UTC"}, id="toolu_1")]),
        Reply(text="It is ten."),
    )
    p = provider(server)
    first = await p.complete(ModelRequest(list(START), TOOLS))
    [call] = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("toolu_1", "get_time", '{"zone": "UTC"}')
    assert first.finish_reason == "tool_calls"
    result = {"role": "tool", "tool_call_id": "toolu_1", "content": "10:00"}
    second = await p.complete(ModelRequest([*START, first.as_message(), result], TOOLS))
    await p.aclose()
    assert second.content == "It is ten."
    turns = server.wire_bodies[1]["messages"]
    assert turns[1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {"zone": "UTC"}}
    ]
    assert turns[2]["content"][0]["type"] == "tool_result"
    assert server.violations == []


async def test_thinking_round_trips_with_its_signature(server: FakeAnthropicServer) -> None:
    server.push(
        Reply(reasoning="The user wants the time.", tool_calls=[ToolCallSpec("get_time", {})]),
        Reply(reasoning="Now answer.", text="Ten."),
    )
    p = provider(server, thinking_budget_tokens=2048, max_output_tokens=4096)
    first = await p.complete(ModelRequest(list(START), TOOLS))
    assert first.reasoning is not None
    stored = first.as_message()["reasoning"]
    assert stored["format"] == "anthropic" and stored["model"] == MODEL
    [detail] = stored["details"]
    assert detail["thinking"] == "The user wants the time." and detail["signature"]
    result = {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "10:00"}
    second = await p.complete(ModelRequest([*START, first.as_message(), result], TOOLS))
    await p.aclose()
    assert second.content == "Ten." and second.reasoning is not None
    assert server.wire_bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert server.wire_bodies[1]["messages"][1]["content"][0] == detail  # byte for byte
    assert server.violations == []


async def test_a_changed_signature_is_refused_as_the_api_does(
    server: FakeAnthropicServer,
) -> None:
    server.push(Reply(reasoning="secret plan", tool_calls=[ToolCallSpec("get_time", {})]))
    p = provider(server, thinking_budget_tokens=2048, max_output_tokens=4096)
    first = await p.complete(ModelRequest(list(START), TOOLS))
    tampered = first.as_message()
    tampered["reasoning"]["details"][0]["thinking"] = "another plan"
    result = {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "10:00"}
    with pytest.raises(ProviderError, match=r"HTTP 400: messages\.1: Invalid `signature`"):
        await p.complete(ModelRequest([*START, tampered, result], TOOLS))
    await p.aclose()
    assert len(server.violations) == 1  # the fake noticed, so a provider bug fails tests
    server.violations.clear()


async def test_thinking_of_another_model_is_not_replayed(server: FakeAnthropicServer) -> None:
    server.push(Reply(reasoning="plan", tool_calls=[ToolCallSpec("get_time", {})]), Reply())
    p = provider(server, thinking_budget_tokens=2048, max_output_tokens=4096)
    first = await p.complete(ModelRequest(list(START), TOOLS))
    result = {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "10:00"}
    request = ModelRequest([*START, first.as_message(), result], TOOLS, model="claude-other")
    await p.complete(request)
    await p.aclose()
    types = [b["type"] for b in server.wire_bodies[1]["messages"][1]["content"]]
    assert types == ["tool_use"]
    # Mid tool loop without the turn's thinking, the API refuses thinking: this call goes without.
    assert "thinking" not in server.wire_bodies[1]
    assert server.violations == []


async def test_cancelling_closes_the_stream(server: FakeAnthropicServer) -> None:
    server.push(Reply(text="PARTIAL " * 40, token_delay_s=0.01, hang=True))
    p = provider(server)
    got_text = anyio.Event()

    async def on_delta(_text: str) -> None:
        got_text.set()

    async with anyio.create_task_group() as group:
        group.start_soon(p.complete, ModelRequest(list(START)), on_delta)
        await got_text.wait()
        group.cancel_scope.cancel()
    record = await server.await_abort(0, timeout_s=2)
    await p.aclose()
    assert record.aborted


async def test_usage_counts_cache_reads_and_all_input(server: FakeAnthropicServer) -> None:
    server.push(Reply(text="one"), Reply(text="two"))
    p = provider(server)
    first = await p.complete(ModelRequest(list(START), TOOLS))
    messages = [*START, first.as_message(), {"role": "user", "content": "again"}]
    second = await p.complete(ModelRequest(messages, TOOLS))
    await p.aclose()
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens == server.cache_reads[1] > 0
    assert second.usage.prompt_tokens == server.input_totals[1] > second.usage.cached_tokens
    assert second.usage.completion_tokens == 1


async def test_a_refused_key_is_not_retried(server: FakeAnthropicServer) -> None:
    server.push(Reply(status=401, error_message="invalid x-api-key"))
    p = provider(server, max_retries=3, key_source="the environment variable ANTHROPIC_API_KEY")
    with pytest.raises(ModelKeyRefused, match=r"HTTP 401.*ANTHROPIC_API_KEY"):
        await p.complete(ModelRequest(list(START)))
    await p.aclose()
    assert len(server.requests) == 1


async def test_overloaded_is_retried_then_unavailable(server: FakeAnthropicServer) -> None:
    overloaded = Reply(status=529, error_message="Overloaded", retry_after_s=0.01)
    server.push(overloaded, overloaded, overloaded)
    p = provider(server, max_retries=2)
    with pytest.raises(ModelUnavailable, match=r"HTTP 529 \(overloaded_error\) after 2 retries"):
        await p.complete(ModelRequest(list(START)))
    await p.aclose()
    assert len(server.requests) == 3


async def test_a_retry_that_succeeds_returns_the_reply(server: FakeAnthropicServer) -> None:
    server.push(Reply(status=429, error_message="slow down", retry_after_s=0.01), Reply(text="ok"))
    p = provider(server, max_retries=1)
    response = await p.complete(ModelRequest(list(START)))
    await p.aclose()
    assert response.content == "ok" and len(server.requests) == 2


async def test_an_error_event_mid_stream_is_unavailable(server: FakeAnthropicServer) -> None:
    server.push(Reply(text="half an answer", corrupt="overloaded"))
    p = provider(server)
    with pytest.raises(ModelUnavailable, match="overloaded_error"):
        await p.complete(ModelRequest(list(START)))
    await p.aclose()


async def test_prompt_too_long_is_context_too_long(server: FakeAnthropicServer) -> None:
    server.push(Reply(status=400, error_message="prompt is too long: 210000 tokens > 200000"))
    p = provider(server)
    with pytest.raises(ContextTooLong, match=r"context window.*210000 tokens"):
        await p.complete(ModelRequest(list(START)))
    await p.aclose()


async def test_an_endpoint_that_is_down_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    p = AnthropicProvider(
        api_key="k", model=MODEL, base_url=f"http://127.0.0.1:{port}", max_retries=0
    )
    with pytest.raises(ModelUnavailable, match="connection failed"):
        await p.complete(ModelRequest(list(START)))
    await p.aclose()


async def test_config_picks_the_provider_and_its_defaults(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    default = LlmSection(provider="anthropic", model=MODEL)
    assert default.base_url == "https://api.anthropic.com"
    assert default.api_key_env == "ANTHROPIC_API_KEY"
    assert default.resolve_api_key() == "sk-ant-from-env"
    assert LlmSection(model=MODEL).api_key_env == "OPENAI_API_KEY"
    llm = LlmSection(provider="anthropic", model=MODEL, base_url=server.base_url, max_retries=0)
    chosen = make_provider(llm, llm.resolve_api_key())
    assert isinstance(chosen, AnthropicProvider) and isinstance(chosen, WireBody)
    assert chosen.describe() == f"anthropic model {MODEL!r} at {server.base_url}"
    server.push(Reply(text="configured"))
    response = await chosen.complete(ModelRequest(list(START)))
    await chosen.aclose()
    assert response.content == "configured"
    assert "sk-ant-from-env" in str(server.requests[0].headers)


@pytest.mark.parametrize(
    ("budget", "max_output", "fix"),
    [(512, 8192, "minimum of 1024"), (8192, 8192, "must be below max_output_tokens")],
)
def test_a_thinking_budget_the_api_refuses_is_a_config_error(
    budget: int, max_output: int, fix: str
) -> None:
    with pytest.raises(ValueError, match=fix):
        LlmSection(
            provider="anthropic",
            model=MODEL,
            thinking_budget_tokens=budget,
            max_output_tokens=max_output,
        )


def test_without_the_sdk_the_config_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "anthropic" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ValueError, match=r"pip install 'wakeful\[anthropic\]'"):
        LlmSection(provider="anthropic", model=MODEL)
    assert LlmSection(model=MODEL).provider == "openai"  # the default needs no SDK
