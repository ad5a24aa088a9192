"""The fake model server speaks OpenAI's wire format and notices everything clients do."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from tests.fakes.model_replies import tokenize
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def client(model_server: FakeModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """An SDK client pointed at the fake server, without retries."""
    sdk = openai.AsyncOpenAI(base_url=model_server.base_url, api_key="test-key", max_retries=0)
    yield sdk
    await sdk.close()


async def stream_chunks(
    client: openai.AsyncOpenAI, max_tokens: int | None = None
) -> list[ChatCompletionChunk]:
    stream = await client.chat.completions.create(
        model="fake",
        messages=HELLO,
        stream=True,
        stream_options={"include_usage": True},
        max_tokens=openai.omit if max_tokens is None else max_tokens,
    )
    return [chunk async for chunk in stream]


@pytest.mark.anyio
async def test_text_streams_token_by_token(
    model_server: FakeModelServer, client: openai.AsyncOpenAI
) -> None:
    """Each word arrives in its own chunk, followed by a finish chunk and a usage chunk."""
    model_server.push(Reply(text="The quick brown fox"))
    chunks = await stream_chunks(client)
    contents = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert contents == ["The", " quick", " brown", " fox"]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 4


@pytest.mark.anyio
async def test_tool_calls_stream_like_the_real_api(
    model_server: FakeModelServer, client: openai.AsyncOpenAI
) -> None:
    """A call opens with id, type and name and empty arguments, then argument fragments follow."""
    model_server.push(Reply(tool_calls=[ToolCallSpec("search", {"query": "weather in Paris"})]))
    chunks = await stream_chunks(client)
    parts = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    opening = parts[0]
    assert opening.index == 0 and opening.type == "function"
    assert opening.id is not None and opening.id.startswith("call_")
    assert opening.function is not None and opening.function.name == "search"
    assert opening.function.arguments == ""
    fragments = [p.function.arguments or "" for p in parts[1:] if p.function]
    assert len(fragments) > 1
    assert "".join(fragments) == '{"query": "weather in Paris"}'
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


@pytest.mark.anyio
async def test_non_streaming_request_gets_a_completion_body(
    model_server: FakeModelServer, client: openai.AsyncOpenAI
) -> None:
    """Without stream=True the SDK parses an ordinary chat.completion."""
    model_server.push(Reply(text="whole", tool_calls=[ToolCallSpec("search", "{}", id="c1")]))
    completion = await client.chat.completions.create(model="fake", messages=HELLO)
    message = completion.choices[0].message
    assert message.content == "whole"
    assert message.tool_calls is not None and message.tool_calls[0].id == "c1"
    assert completion.choices[0].finish_reason == "tool_calls"
    assert model_server.requests[0].completed


@pytest.mark.anyio
async def test_queue_first_then_responder(
    model_server: FakeModelServer, client: openai.AsyncOpenAI
) -> None:
    """Pushed replies are served in order; after them the responder sees each request body."""
    model_server.push(Reply(text="first"), Reply(text="second"))
    model_server.responder = lambda body: Reply(text=f"echo {body['messages'][-1]['content']}")
    texts = []
    for _ in range(3):
        completion = await client.chat.completions.create(model="fake", messages=HELLO)
        texts.append(completion.choices[0].message.content)
    assert texts == ["first", "second", "echo hi"]


@pytest.mark.anyio
async def test_requests_are_recorded_in_order(
    model_server: FakeModelServer, client: openai.AsyncOpenAI
) -> None:
    """Every request is kept with its body, headers, arrival time and outcome."""
    before = time.monotonic()
    await stream_chunks(client)
    await stream_chunks(client, max_tokens=7)
    records = await model_server.await_requests(2)
    assert [r.index for r in records] == [0, 1]
    assert records[1].body["max_tokens"] == 7
    assert records[0].headers["authorization"] == "Bearer test-key"
    assert before <= records[0].received_at <= records[1].received_at
    assert all(r.completed and not r.aborted for r in records)


@pytest.mark.anyio
async def test_a_request_cut_off_before_its_body_gets_no_reply(
    model_server: FakeModelServer, client: openai.AsyncOpenAI
) -> None:
    """A client that hangs up mid-body (a daemon stopped while sending) is recorded,
    aborted, with no reply: the next request gets the first one, so a request's index
    and the number of the reply it got differ from then on (``record.reply`` says which)."""
    model_server.push(Reply(text="R0 first"))
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    async with await anyio.connect_tcp("127.0.0.1", model_server.port) as stream:
        await stream.send(head.encode() + b'{"model": "fake", "mess')
    await model_server.await_requests(1)  # recorded once the server saw the hang-up
    completion = await client.chat.completions.create(model="fake", messages=HELLO)
    records = await model_server.await_requests(2)
    assert records[0].aborted and records[0].reply is None
    assert records[1].reply is not None and records[1].reply.text == "R0 first"
    assert completion.choices[0].message.content == "R0 first"


@pytest.mark.anyio
async def test_abandoned_stream_is_detected_promptly(
    model_server: FakeModelServer, client: openai.AsyncOpenAI
) -> None:
    """Closing a hanging stream after the first token is recorded as an abort within a second."""
    model_server.push(Reply(text="never finishes", hang=True))
    stream = await client.chat.completions.create(model="fake", messages=HELLO, stream=True)
    await stream.__anext__()
    await stream.close()
    closed_at = time.monotonic()
    record = await model_server.await_abort(0, 1.0)
    assert record.aborted and not record.completed
    assert record.aborted_at is not None and record.aborted_at - closed_at < 1.0


@pytest.mark.anyio
async def test_error_status_is_injected(
    model_server: FakeModelServer, client: openai.AsyncOpenAI
) -> None:
    """A scripted 503 reaches the SDK as an error with that status; the next reply succeeds."""
    model_server.push(Reply(status=503, error_message="overloaded"), Reply(text="fine"))
    with pytest.raises(openai.InternalServerError, match="overloaded") as caught:
        await stream_chunks(client)
    assert caught.value.status_code == 503
    chunks = await stream_chunks(client)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "fine"


@pytest.mark.anyio
async def test_invalid_trajectory_is_recorded_as_a_violation() -> None:
    """A request with an orphan tool result is served but listed in `violations`."""
    with FakeModelServer() as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            orphan: list[Any] = [HELLO[0], {"role": "tool", "tool_call_id": "x", "content": "r"}]
            await sdk.chat.completions.create(model="fake", messages=orphan)
    assert len(server.violations) == 1
    assert "request 0" in server.violations[0] and "orphan" in server.violations[0]


@pytest.mark.anyio
async def test_shutdown_is_prompt_while_a_stream_hangs() -> None:
    """Closing the server cuts off a hanging stream instead of waiting for it."""
    server = FakeModelServer().__enter__()
    server.push(Reply(text="stuck", hang=True))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
        stream = await sdk.chat.completions.create(model="fake", messages=HELLO, stream=True)
        await stream.__anext__()
        started = time.monotonic()
        await anyio.to_thread.run_sync(server.close)
        assert time.monotonic() - started < 2.0
        with pytest.raises(openai.APIConnectionError):
            async for _ in stream:
                pass


def test_tokenize_keeps_leading_whitespace() -> None:
    """Tokens rejoin to the original text."""
    assert tokenize("a  b\nc") == ["a", "  b", "\nc"]
    assert "".join(tokenize(" spaced out ")) == " spaced out "


def test_standalone_process_serves_a_script(tmp_path: Path) -> None:
    """`python -m tests.fakes.model_server --script FILE` serves the scripted replies."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from a file", "tool_calls": [{"name": "f"}]}]))
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "tests.fakes.model_server", "--script", str(script)]
    with subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().strip()
            with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0) as sdk:
                completion = sdk.chat.completions.create(model="fake", messages=HELLO)
        finally:
            process.terminate()
    message = completion.choices[0].message
    assert message.content == "from a file"
    assert message.tool_calls is not None
    assert message.tool_calls[0].model_dump()["function"]["name"] == "f"
