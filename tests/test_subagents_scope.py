"""What a child is offered and what it says: its replies stay in its trajectory (no chat
channel gets them; the parent sees its result), it is not given the tools that talk to
the user, its prompt's index names only the tools it may call; and a top-level session
is not offered report_to_parent, with its prompt and tools array unchanged between runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.subagent_model import CHILD_MARK, conversation, poll

pytestmark = pytest.mark.anyio

CHILD_TOOLS = ["get_time", "list_timers", "task_status"]
INDEX_HEADING = "Other tools (call by name"


class ScopeModel:
    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = conversation(body)
        last = messages[-1]
        if CHILD_MARK in str(messages[0].get("content")):
            if last["role"] == "tool":
                return Reply(text="FOUND: the time")
            # Text and a call in one reply: the text is not a message to anyone.
            return Reply(text="working on it", tool_calls=[ToolCallSpec("get_time")])
        text = str(last.get("content") or "")
        if last["role"] == "tool":
            return Reply(text="delegated")
        if "SCOPE" in text:
            return Reply(
                tool_calls=[ToolCallSpec("spawn_subagent", {"task": "t", "tools": CHILD_TOOLS})]
            )
        if "FOUND: the time" in text:
            return Reply(text="the child found the time")
        return Reply(text="ok")


def system_prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def indexed(body: dict[str, Any]) -> set[str]:
    """The tool names the system prompt's deferred-tool index lists."""
    prompt = system_prompt(body)
    if INDEX_HEADING not in prompt:
        return set()
    section = prompt.split(INDEX_HEADING, 1)[1].split("\n", 1)[1]
    return {
        name for line in section.splitlines() for name in re.split(r", ", line.split(": ", 1)[1])
    }


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


async def outbox(h: Harness, session: str) -> list[dict[str, Any]]:
    response = await h.client.get(f"/api/sessions/{session}/outbox")
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages


async def test_a_child_speaks_to_its_parent_only_and_is_offered_only_its_tools(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.responder = ScopeModel()
    settings = daemon_settings(tmp_path, model_server.base_url, tools={"defer": "always"})
    async with harness(settings) as h:
        await h.send("SCOPE")

        async def integrated() -> bool:
            return any("the child found" in str(m.get("content")) for m in await h.trajectory())

        await poll(integrated)
        await h.send("and now something else")

        async def answered() -> bool:
            return (await h.trajectory())[-1].get("content") == "ok"

        await poll(answered)
        tasks = (await h.client.get("/api/status")).json()["sessions"]["main"]["tasks"]
        (child,) = [t for t in tasks if t.get("kind") == "subagent"]
        child_trajectory = await h.trajectory(child["session"])
        child_outbox = await outbox(h, child["session"])
        main_outbox = await outbox(h, "main")

    # 3. Its words stay in its trajectory; the parent's task view shows its result.
    assert [m["content"] for m in child_trajectory if m["role"] == "assistant"] == [
        "working on it",
        "FOUND: the time",
    ]
    assert child_outbox == []
    assert "FOUND: the time" in child["last_result"]
    assert [m["text"] for m in main_outbox] == ["delegated", "the child found the time", "ok"]

    requests = [r.body for r in model_server.requests]
    child_requests = [b for b in requests if CHILD_MARK in str(conversation(b)[0].get("content"))]
    main_requests = [b for b in requests if b not in child_requests]
    assert len(child_requests) == 2 and len(main_requests) == 4
    # It is not given the tools that talk to the user (reply_to_user is resident).
    assert "reply_to_user" in tool_names(main_requests[0])
    for body in child_requests:
        assert set(tool_names(body)) <= {*CHILD_TOOLS, "report_to_parent"}
        assert "reply_to_user" not in tool_names(body)
    # 5. Its prompt's index names only the deferred tools it may call.
    child_index = indexed(child_requests[0])
    assert "report_to_parent" in child_index
    assert child_index <= {*CHILD_TOOLS, "report_to_parent"}
    assert "send_message_to_subagent" not in child_index
    assert system_prompt(child_requests[0]) == system_prompt(child_requests[1])
    # 4. A top-level session is not offered report_to_parent, and its prompt and tools
    # array are the same bytes in every request (before and after its child worked).
    main_index = indexed(main_requests[0])
    assert "send_message_to_subagent" in main_index and "report_to_parent" not in main_index
    assert "report_to_parent" not in tool_names(main_requests[0])
    assert len({system_prompt(b) for b in main_requests}) == 1
    # The tools array only grows at its end: a deferred tool called by name
    # (spawn_subagent) is appended after the resident block, whose bytes stay.
    block = main_requests[0]["tools"]
    assert all(json.dumps(b["tools"][: len(block)]) == json.dumps(block) for b in main_requests)
    assert model_server.violations == []
