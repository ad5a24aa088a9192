"""The session stream over real HTTP: text deltas as the model streams, then the reply
with its outbox id; tool activity (started / finished); and reply_to_user's honest answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.core.loop import session_loop

pytestmark = pytest.mark.anyio


async def items_until(
    lines: AsyncIterator[str], done: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    async for line in lines:
        if line.startswith("data: "):
            items.append(json.loads(line.removeprefix("data: ")))
            if done(items):
                return items
    raise AssertionError("the stream ended early")


@asynccontextmanager
async def daemon_and_stream(
    tmp_path: Path, model_server: FakeModelServer
) -> AsyncIterator[tuple[Harness, AsyncIterator[str]]]:
    """An in-process daemon and a live SSE subscription to its session "main"."""
    async with (
        harness(daemon_settings(tmp_path, model_server.base_url)) as h,
        h.client.stream("GET", "/api/sessions/main/stream") as response,
    ):
        lines = response.aiter_lines()
        assert await anext(lines) == ": ready"
        yield h, lines


async def one_shell_call_run(
    tmp_path: Path, model_server: FakeModelServer, command: str, call_id: str, answer: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A run that calls shell_exec once, then answers: its stream items until idle,
    and the session's unread messages after it."""
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command}, id=call_id)]),
        Reply(text=answer),
    )
    async with daemon_and_stream(tmp_path, model_server) as (h, lines):
        await h.send("go")
        with anyio.fail_after(10):
            items = await items_until(lines, run_idle)
        unread = (await h.client.get("/api/sessions/main/outbox?unread=1")).json()["messages"]
    return items, unread


def run_idle(items: list[dict[str, Any]]) -> bool:
    return items[-1]["type"] == "run" and items[-1]["state"] == "idle"


def replied_after_second_note(items: list[dict[str, Any]]) -> bool:
    texts = [i["text"] for i in items if i["type"] == "reply"]
    return "second note" in texts and "ok" in texts[texts.index("second note") :]


async def test_stream_carries_deltas_reply_with_id_and_tool_activity(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    items, unread = await one_shell_call_run(
        tmp_path, model_server, "echo forty-two", "c1", "The answer is forty-two, as computed."
    )
    kinds = [i["type"] for i in items]
    tools = [i for i in items if i["type"] == "tool"]
    assert [(t["state"], t["name"], t["call_id"]) for t in tools] == [
        ("started", "shell_exec", "c1"),
        ("finished", "shell_exec", "c1"),
    ]
    assert "echo forty-two" in tools[0]["preview"] and "forty-two" in tools[1]["preview"]
    assert tools[1]["outcome"] == "done" and tools[1]["elapsed_s"] >= 0
    reply_at = kinds.index("reply")
    deltas = [i["delta"] for i in items[:reply_at] if i["type"] == "delta"]
    assert len(deltas) > 1 and "".join(deltas) == "The answer is forty-two, as computed."
    assert kinds.index("tool") < kinds.index("delta")  # the text came after the tool ran
    reply = items[reply_at]
    assert reply["text"] == "The answer is forty-two, as computed."
    [stored] = unread  # shown live, yet unread until a client acknowledges it
    assert (reply["id"], reply["channel"]) == (stored["id"], "chat:web")


async def test_reply_to_user_reports_whether_anyone_saw_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """With nobody connected it says "queued … nobody is connected", with a client
    connected "delivered … (1 client connected)"; either way the text is in the outbox."""
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("reply_to_user", {"text": "first note"})]),
        Reply(text="ok"),
        Reply(tool_calls=[ToolCallSpec("reply_to_user", {"text": "second note"})]),
        Reply(text="ok"),
    )
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        await h.send("tell me something")
        with anyio.fail_after(10):
            await model_server.await_requests(2)
            await model_server.await_completion(1)
        async with h.client.stream("GET", "/api/sessions/main/stream") as response:
            lines = response.aiter_lines()
            assert await anext(lines) == ": ready"
            await h.send("and again")
            with anyio.fail_after(10):
                await items_until(lines, replied_after_second_note)
        messages = (await h.client.get("/api/sessions/main/outbox")).json()["messages"]
    tool_results = [m["content"] for m in await_tool_results(model_server)]
    assert tool_results[0].startswith("queued for chat:web; nobody is connected")
    assert tool_results[1] == "delivered to chat:web (1 client connected)"
    assert [m["text"] for m in messages] == ["first note", "ok", "second note", "ok"]


def await_tool_results(model_server: FakeModelServer) -> list[dict[str, Any]]:
    results = []
    for request in model_server.requests:
        results += [m for m in request.body["messages"] if m["role"] == "tool"]
    unique = {m["tool_call_id"]: m for m in results}
    return list(unique.values())


async def test_a_long_tool_call_reports_progress(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a call runs, `tool` items with state "progress" say how long it has run."""
    monkeypatch.setattr(session_loop, "PROGRESS_EVERY_S", 0.05)
    items, _ = await one_shell_call_run(tmp_path, model_server, "sleep 0.4", "slow", "done")
    phases = [(i["state"], i["elapsed_s"]) for i in items if i["type"] == "tool"]
    assert phases[0][0] == "started" and phases[-1][0] == "finished"
    progress = [elapsed for state, elapsed in phases[1:-1] if state == "progress"]
    assert len(progress) >= 2 and progress == sorted(progress) and progress[0] > 0
    assert phases[-1][1] >= 0.4


async def test_interrupted_stream_retracts_its_deltas(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Text streamed before an interrupt is followed by a `discarded` item, never a reply."""
    model_server.push(
        Reply(text="a long answer that will be cut " * 20, token_delay_s=0.02),
        Reply(text="Stopped."),
    )
    async with daemon_and_stream(tmp_path, model_server) as (h, lines):
        await h.send("write a lot")
        with anyio.fail_after(10):
            await items_until(lines, lambda items: items[-1]["type"] == "delta")
            await h.send("stop", kind="user.interrupt")
            items = await items_until(
                lines, lambda items: items[-1].get("text") == "Stopped." or run_idle(items)
            )
    kinds = [i["type"] for i in items]
    discarded = items[kinds.index("discarded")]
    assert discarded["chars"] > 0 and discarded["cause"]
    assert [i["text"] for i in items if i["type"] == "reply"] == ["Stopped."]
