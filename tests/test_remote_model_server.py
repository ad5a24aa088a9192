"""The fake model server in a child process is scripted and observed over its control API."""

from __future__ import annotations

import os
import time
from typing import Any

import anyio
import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.fakes.model_replies import Reply, ToolCallSpec
from tests.fakes.remote_model_server import RemoteFakeModelServer

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


def echo(body: dict[str, Any]) -> Reply:
    """A responder the child process imports by name (`tests.test_remote_model_server:echo`)."""
    return Reply(text=f"echo {body['messages'][-1]['content']}")


def sdk(server: RemoteFakeModelServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)


@pytest.mark.anyio
async def test_pushed_replies_then_named_responder() -> None:
    """Pushed replies (tool calls included) come first, then the responder selected by name."""
    async with RemoteFakeModelServer() as server, sdk(server) as client:
        await server.push(Reply(tool_calls=[ToolCallSpec("f", {"a": 1})]))
        await server.use_responder("tests.test_remote_model_server:echo")
        first = await client.chat.completions.create(model="fake", messages=HELLO)
        second = await client.chat.completions.create(model="fake", messages=HELLO)
        records = await server.requests()
        with_bodies = await server.requests(1, bodies=True)
    calls = first.choices[0].message.tool_calls
    assert calls is not None and calls[0].model_dump()["function"]["arguments"] == '{"a": 1}'
    assert second.choices[0].message.content == "echo hi"
    assert [(r.index, r.completed, r.body) for r in records] == [(0, True, {}), (1, True, {})]
    assert [r.index for r in with_bodies] == [1]
    assert with_bodies[0].body["messages"] == HELLO


@pytest.mark.anyio
async def test_abort_stamp_compares_with_this_process_clock() -> None:
    """A stream closed here is seen aborted there, stamped on the same monotonic clock."""
    async with RemoteFakeModelServer() as server, sdk(server) as client:
        await server.push(Reply(text="never finishes", hang=True))
        stream = await client.chat.completions.create(model="fake", messages=HELLO, stream=True)
        await stream.__anext__()
        await server.await_requests(1)
        await stream.close()
        closed_at = time.monotonic()
        record = await server.await_abort(0, timeout_s=2.0)
    assert record.aborted and not record.completed
    assert record.aborted_at is not None
    assert record.received_at < closed_at and abs(record.aborted_at - closed_at) < 1.0


@pytest.mark.anyio
async def test_long_polls_answer_when_the_condition_holds_or_time_out() -> None:
    """`await_containing` finds the request by text; an unmet wait raises TimeoutError."""
    async with RemoteFakeModelServer() as server, sdk(server) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(server.await_containing, "needle", 0, 5.0)
            await client.chat.completions.create(model="fake", messages=HELLO)
            needle: list[ChatCompletionMessageParam] = [{"role": "user", "content": "a needle"}]
            await client.chat.completions.create(model="fake", messages=needle)
        found = await server.await_containing("needle")
        await server.await_quiet(quiet_s=0.05)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await server.await_requests(3, timeout_s=0.2)
        waited = time.monotonic() - started
    assert found.index == 1 and found.body["messages"] == needle
    assert 0.2 <= waited < 2.0


@pytest.mark.anyio
async def test_violations_reset_and_bad_requests() -> None:
    """Violations are reported, reset forgets everything, and a bad responder name is a 400."""
    async with RemoteFakeModelServer() as server, sdk(server) as client:
        orphan: list[Any] = [HELLO[0], {"role": "tool", "tool_call_id": "x", "content": "r"}]
        await client.chat.completions.create(model="fake", messages=orphan)
        violations = await server.violations()
        await server.reset()
        after_reset = (await server.requests(), await server.violations())
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await server.use_responder("no-such-responder")
        pid = server.pid
    assert len(violations) == 1 and "orphan" in violations[0]
    assert after_reset == ([], [])
    assert caught.value.response.status_code == 400
    assert "no-such-responder" in caught.value.response.text
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the child was stopped and reaped on exit
