"""SPEC §9 scenarios 2 (first half), 3 and 4, end to end over real HTTP, on both providers.

Each test runs against the fake OpenAI server and the fake Anthropic Messages
server; both check every request they get (the Anthropic one as the real API
would) and record it in the canonical form, so the assertions are shared.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests import processes
from tests.daemon_harness import harness, last_user_text, settings_for, watch_feed
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.core.loop.parallel import SIDE_QUESTION_NOTE

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["openai", "anthropic"])
def model_server(request: pytest.FixtureRequest) -> Iterator[FakeModelServer]:
    """A fake model endpoint of each provider; every request must be one its API accepts."""
    server = FakeAnthropicServer() if request.param == "anthropic" else FakeModelServer()
    with server:
        yield server
    assert server.violations == [], "invalid requests were sent to the model"


async def test_cancel_stops_model_and_tool(tmp_path: Path, model_server: FakeModelServer) -> None:
    """Scenario 4: "cancel" during a long tool stops it at once and the trajectory says so."""
    marker = f"wakeful-test-{uuid.uuid4().hex}"
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": f"sleep 600; echo {marker}"})]),
        Reply(text="Stopped, as you asked."),
        Reply(text="Noted: the job was cancelled."),
    )
    async with harness(settings_for(tmp_path, model_server)) as h:
        async with watch_feed(h) as feed:
            await h.send("run the long job")
            pgid = await anyio.to_thread.run_sync(processes.wait_for_pgid, marker)
            await h.send("cancel")
            await feed.wait_for(lambda i: i.get("text") == "Stopped, as you asked.")
            if not _late_result_before_reply(await h.trajectory()):
                # The killed tool's result came after the cancel's batch was taken:
                # it gets a turn of its own. (Otherwise both were in one batch.)
                await feed.wait_for(lambda i: i.get("text") == "Noted: the job was cancelled.")
        assert processes.group_members(pgid) == []
        messages = await h.trajectory()
    roles = [m["role"] for m in messages]
    assert roles[:4] == ["user", "assistant", "tool", "user"]
    assert roles[4:] in (["user", "assistant"], ["assistant", "user", "assistant"])
    placeholder = messages[2]["content"]
    assert "interrupted after" in placeholder and "cancelled" in placeholder
    assert "may have partially executed" in placeholder
    assert "'cancel'" in placeholder
    assert messages[3]["content"].endswith("cancel")
    [late] = [m["content"] for m in messages if _is_late_result(m)]
    assert messages[1]["tool_calls"][0]["id"] in late
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert len(tool_messages) == 1  # the real result came as an event, not a second tool message


def _late_result_before_reply(messages: list[dict[str, Any]]) -> bool:
    """The late result was batched with the cancel (it precedes the reply to it)."""
    late = [i for i, m in enumerate(messages) if _is_late_result(m)]
    replies = [i for i, m in enumerate(messages) if m.get("content") == "Stopped, as you asked."]
    return bool(late and replies and late[0] < replies[0])


def _is_late_result(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and "Late result from shell_exec" in message["content"]


async def test_stop_while_streaming_discards_partial_output(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Rule 4: "stop" during a streaming reply closes the stream and drops the partial text."""
    model_server.push(
        Reply(text="PARTIAL " * 50, token_delay_s=0.05, hang=True),
        Reply(text="OK, stopping."),
    )
    async with harness(settings_for(tmp_path, model_server)) as h:
        async with watch_feed(h) as feed:
            await h.send("write me an essay")
            await model_server.await_requests(1)
            await h.send("stop!")
            await model_server.await_abort(0, timeout_s=2)
            await feed.wait_for(lambda i: i.get("text") == "OK, stopping.")
        messages = await h.trajectory()
    assert not any("PARTIAL" in (m.get("content") or "") for m in messages)
    assert [m["role"] for m in messages] == ["user", "user", "assistant"]
    second = model_server.requests[1].body["messages"]
    assert last_user_text(model_server.requests[1].body).endswith("stop!")
    assert not any("PARTIAL" in (m.get("content") or "") for m in second)


async def test_batch_applies_both_notes(tmp_path: Path, model_server: FakeModelServer) -> None:
    """Scenario 3: two notes sent during a long task reach the model together, marked."""
    gate = tmp_path / "workspace" / "gate"  # where commands may look
    command = f"while [ ! -e {gate} ]; do sleep 0.05; done; echo report-ready"
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})]),
        Reply(text="<html lang='ja'><body>レポート</body></html>"),
    )
    settings = settings_for(tmp_path, model_server)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("write the report")
        await feed.wait_for(lambda i: i["type"] == "task" and i["state"] == "started")
        await h.send("remember to answer in Japanese")
        await h.send("format it as a web page")
        await feed.wait_for(lambda i: i.get("text") == "format it as a web page")
        gate.touch()
        await feed.wait_for(lambda i: i["type"] == "reply")
    assert len(model_server.requests) == 2
    second = model_server.requests[1].body["messages"]
    tail = [m for m in second if m["role"] != "system"][-4:-1]
    assert tail[0]["role"] == "tool" and "report-ready" in tail[0]["content"]
    assert tail[1]["content"].startswith("[Unprocessed event 1/2]")
    assert "remember to answer in Japanese" in tail[1]["content"]
    assert tail[2]["content"].startswith("[Unprocessed event 2/2]")
    assert "There are 2 unprocessed events above: 2 user messages." in tail[2]["content"]


def side_or_main(body: dict[str, Any]) -> Reply:
    """Answers side questions with get_time then text; the main task gets a summary."""
    last = body["messages"][-1]
    if last["role"] == "user" and SIDE_QUESTION_NOTE in (last.get("content") or ""):
        return Reply(tool_calls=[ToolCallSpec("get_time", {})])
    if last["role"] == "tool" and any(
        SIDE_QUESTION_NOTE in (m.get("content") or "") for m in body["messages"]
    ):
        return Reply(text="It is 10:00 UTC.")
    return Reply(text="The build finished: all green.")


async def test_quick_question_answered_in_parallel(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Scenario 2: "what time is it?" is answered while a long command runs, then noted."""
    gate = tmp_path / "workspace" / "gate"  # where commands may look
    command = f"while [ ! -e {gate} ]; do sleep 0.05; done; echo build-done"
    model_server.push(Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})]))
    model_server.responder = side_or_main
    async with harness(settings_for(tmp_path, model_server)) as h:
        async with watch_feed(h) as feed:
            await h.send("run the build")
            await feed.wait_for(lambda i: i["type"] == "task" and i["state"] == "started")
            await h.send("what time is it?")
            answer = await feed.wait_for(lambda i: i.get("text") == "It is 10:00 UTC.")
            assert not gate.exists()  # answered while the command still ran
            gate.touch()
            await feed.wait_for(lambda i: i.get("text") == "The build finished: all green.")
        assert answer["type"] == "reply"
        messages = await h.trajectory()
    noted = [m for m in messages if "[Handled in parallel with the main task]" in str(m)]
    assert len(noted) == 1
    assert "what time is it?" in noted[0]["content"] and "It is 10:00 UTC." in noted[0]["content"]
    side_requests = [r for r in model_server.requests if SIDE_QUESTION_NOTE in str(r.body)]
    main_prefix = model_server.requests[0].body
    assert side_requests
    block = len(main_prefix["tools"])
    assert side_requests[0].body["tools"] == main_prefix["tools"]
    for request in side_requests:  # same cacheable prefix as the main loop
        # (a deferred tool it called, get_time, is appended after the block)
        assert request.body["tools"][:block] == main_prefix["tools"]
        assert request.body["messages"][0] == main_prefix["messages"][0]
