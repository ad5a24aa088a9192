"""OpenAIProvider against the fake server over real HTTP, through the real SDK."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import pytest

from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.llm import (
    HOW_TO_CONFIGURE,
    ModelKeyRefused,
    ModelNotConfigured,
    ModelRequest,
    ModelUnavailable,
    NullProvider,
    OpenAIProvider,
    ToolCall,
)

TOOLS = [
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "fetch", "parameters": {"type": "object"}}},
]
REQUEST = ModelRequest(messages=[{"role": "user", "content": "hi"}], tools=TOOLS)


@pytest.fixture
async def provider(model_server: FakeModelServer) -> AsyncIterator[OpenAIProvider]:
    """A provider for the fake server with fast retries."""
    llm = OpenAIProvider(model_server.base_url, "sk-secret-key", "fake-model", timeout_s=5.0)
    yield llm
    await llm.aclose()


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.anyio
async def test_text_is_streamed_and_assembled(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """on_delta sees every token in order and the response holds the whole text."""
    model_server.push(Reply(text="Hello there, wide world"))
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    response = await provider.complete(REQUEST, on_delta)
    assert deltas == ["Hello", " there,", " wide", " world"]
    assert response.content == "Hello there, wide world"
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.model == "fake-model"
    assert response.latency_s > 0
    assert response.as_message() == {"role": "assistant", "content": "Hello there, wide world"}


@pytest.mark.anyio
async def test_tool_calls_are_assembled_with_arguments_untouched(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """Parallel calls come back whole, in order, with the model's exact argument text."""
    odd_json = '{"url":  "http://x" ,\n "depth":[1, 2]}'
    model_server.push(
        Reply(
            text="Looking.",
            tool_calls=[
                ToolCallSpec("search", {"query": 'ünïcode and "quotes"'}, id="call_a"),
                ToolCallSpec("fetch", odd_json, id="call_b"),
            ],
        )
    )
    response = await provider.complete(REQUEST)
    assert response.tool_calls == (
        ToolCall("call_a", "search", '{"query": "\\u00fcn\\u00efcode and \\"quotes\\""}'),
        ToolCall("call_b", "fetch", odd_json),
    )
    assert response.content == "Looking."
    assert response.finish_reason == "tool_calls"


@pytest.mark.anyio
async def test_request_carries_model_tools_and_usage_option(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """The provider streams, asks for usage, sends tools and max_tokens, and sends the key."""
    request = ModelRequest(messages=REQUEST.messages, tools=TOOLS, max_tokens=50)
    await provider.complete(request)
    body = model_server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == TOOLS and body["max_tokens"] == 50
    assert body["model"] == "fake-model"
    assert model_server.requests[0].headers["authorization"] == "Bearer sk-secret-key"


@pytest.mark.anyio
async def test_reasoning_is_kept_apart_from_content(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """Reasoning deltas fill `reasoning`, never the content or on_delta."""
    model_server.push(Reply(reasoning="Think first.", text="Answer."))
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    response = await provider.complete(REQUEST, on_delta)
    assert response.reasoning is not None
    assert (response.reasoning.text, response.content) == ("Think first.", "Answer.")
    assert deltas == ["Answer."]


@pytest.mark.anyio
async def test_usage_and_cached_tokens_are_parsed(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """Token counts come from the final usage chunk, including cached prompt tokens."""
    model_server.push(Reply(text="x", prompt_tokens=1200, completion_tokens=9, cached_tokens=1024))
    response = await provider.complete(REQUEST)
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (1200, 9)
    assert response.usage.cached_tokens == 1024


@pytest.mark.anyio
async def test_cancel_on_first_delta_hangs_up_at_once(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """Cancelling the caller when the first token arrives closes the HTTP stream immediately."""
    model_server.push(Reply(text="partial output", hang=True))
    with anyio.CancelScope() as scope:

        async def on_delta(_text: str) -> None:
            scope.cancel()
            await anyio.lowlevel.checkpoint()  # the cancellation lands inside the callback

        await provider.complete(REQUEST, on_delta)
    cancelled_at = time.monotonic()
    assert scope.cancelled_caught
    record = await model_server.await_abort(0, 1.0)
    assert record.aborted_at is not None and record.aborted_at - cancelled_at < 1.0


@pytest.mark.anyio
async def test_timeout_mid_stream_hangs_up(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """A move_on_after expiring while tokens trickle in aborts the request on the server."""
    model_server.push(Reply(text="slow " * 50, token_delay_s=0.05))
    with anyio.move_on_after(0.2) as scope:
        await provider.complete(REQUEST)
    assert scope.cancelled_caught
    record = await model_server.await_abort(0, 1.0)
    assert record.aborted and not record.completed


@pytest.mark.anyio
async def test_server_error_is_retried(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """A 500 followed by a good reply succeeds through the SDK's retry."""
    model_server.push(Reply(status=500, retry_after_s=0.01), Reply(text="second time lucky"))
    response = await provider.complete(REQUEST)
    assert response.content == "second time lucky"
    assert len(model_server.requests) == 2


@pytest.mark.anyio
async def test_exhausted_retries_raise_model_unavailable(model_server: FakeModelServer) -> None:
    """Persistent 429s end in ModelUnavailable naming the endpoint and status."""
    model_server.responder = lambda _body: Reply(status=429, retry_after_s=0.01)
    llm = OpenAIProvider(model_server.base_url, None, "m", max_retries=1)
    with pytest.raises(ModelUnavailable, match="HTTP 429 after 1 retries") as caught:
        await llm.complete(REQUEST)
    await llm.aclose()
    assert model_server.base_url in str(caught.value)
    assert len(model_server.requests) == 2


@pytest.mark.anyio
async def test_endpoint_down_raises_model_unavailable_quickly() -> None:
    """Nobody listening: a clear ModelUnavailable naming the URL, without a long wait."""
    url = f"http://127.0.0.1:{unused_port()}/v1"
    llm = OpenAIProvider(url, "sk-secret-key", "m", timeout_s=2.0, max_retries=0)
    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as caught:
        await llm.complete(REQUEST)
    await llm.aclose()
    assert time.monotonic() - started < 2.0
    message = str(caught.value)
    assert f"Is the server at {url} running? Check [llm] base_url." in message
    assert "sk-secret-key" not in message


@pytest.mark.anyio
async def test_rejected_key_raises_provider_error(
    model_server: FakeModelServer, provider: OpenAIProvider
) -> None:
    """A 401 is a configuration problem, not an outage, and the key is never echoed."""
    model_server.push(Reply(status=401, error_message="Incorrect API key provided"))
    with pytest.raises(ModelKeyRefused, match="refused the API key") as caught:
        await provider.complete(REQUEST)
    assert not isinstance(caught.value, ModelUnavailable)
    assert len(model_server.requests) == 1  # an auth error is not retried
    assert "api_key_env" in str(caught.value)
    assert "sk-secret-key" not in str(caught.value)


@pytest.mark.anyio
async def test_missing_key_uses_a_dummy(model_server: FakeModelServer) -> None:
    """Local servers need no key; the provider still works and describes itself without one."""
    llm = OpenAIProvider(model_server.base_url, None, "local-model")
    response = await llm.complete(REQUEST)
    await llm.aclose()
    assert response.content == "ok"
    assert llm.configured
    assert llm.describe() == f"openai-compatible model 'local-model' at {model_server.base_url}"


def test_describe_never_shows_secrets() -> None:
    """Neither the key nor credentials embedded in the URL appear in describe()."""
    llm = OpenAIProvider("http://user:pw@10.0.0.5:8000/v1", "sk-secret-key", "m")
    assert llm.describe() == "openai-compatible model 'm' at http://10.0.0.5:8000/v1"


@pytest.mark.anyio
async def test_null_provider_explains_how_to_configure() -> None:
    """Without a model every completion raises ModelNotConfigured with the how-to text."""
    null = NullProvider()
    assert not null.configured
    with pytest.raises(ModelNotConfigured) as caught:
        await null.complete(REQUEST)
    assert str(caught.value) == HOW_TO_CONFIGURE
    assert "WAKEFUL_LLM__BASE_URL" in HOW_TO_CONFIGURE
    await null.aclose()
