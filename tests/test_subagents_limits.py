"""Subagent limits: each refusal is a clear tool error, and a child cannot go past its
tools or its budget (the policy chain and the loop's safe point enforce them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.subagent_model import CHILD_MARK, conversation, poll

pytestmark = pytest.mark.anyio

PARENT_CALLS = [
    ToolCallSpec("spawn_subagent", {"task": "try-spawn"}),
    ToolCallSpec("spawn_subagent", {"task": "loop", "budget": {"model_calls": 2}}),
    ToolCallSpec("spawn_subagent", {"task": "x", "tools": ["no_such_tool"]}),
    ToolCallSpec("spawn_subagent", {"task": "x", "budget": {"seconds": 1e9}}),
    ToolCallSpec("send_message_to_subagent", {"subagent_id": "sub-nope", "text": "hi"}),
    ToolCallSpec("report_to_parent", {"text": "I have no parent"}),
]


class LimitsModel:
    def __init__(self) -> None:
        self.child_tools: dict[str, list[str]] = {}  # task → the tool names it was sent
        self.child_prompt: dict[str, str] = {}  # task → its system prompt (deferred names)

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = conversation(body)
        first = str(messages[0].get("content") or "")
        if CHILD_MARK in first:
            task = first.rsplit("Task: ", 1)[1]
            sent = [t["function"]["name"] for t in body.get("tools") or []]
            self.child_tools.setdefault(task, sent)  # its first request's
            self.child_prompt.setdefault(task, str(body["messages"][0].get("content") or ""))
            if task == "try-spawn":
                if messages[-1]["role"] == "tool":
                    return Reply(text="could not spawn")
                return Reply(tool_calls=[ToolCallSpec("spawn_subagent", {"task": "grandchild"})])
            return Reply(tool_calls=[ToolCallSpec("get_time")])  # "loop": never finishes
        if messages[-1]["role"] == "tool":
            if "one too many" not in json.dumps(messages):
                return Reply(tool_calls=[ToolCallSpec("spawn_subagent", {"task": "one too many"})])
            return Reply(text="checked the limits")
        if "LIMITS" in str(messages[-1].get("content")):
            return Reply(tool_calls=PARENT_CALLS)
        return Reply(text="ok")


async def wait_for(h: Harness, predicate: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    async def arrived() -> bool:
        log = await h.daemon.event_log("main")
        found[:] = [e for e in log if e["kind"] == "subagent.result"]
        return bool(predicate(found))

    await poll(arrived)
    return found


async def test_limits_refuse_with_clear_errors_and_budgets_stop_children(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model = LimitsModel()
    model_server.responder = model
    settings = daemon_settings(tmp_path, model_server.base_url, subagents={"max_children": 2})
    async with harness(settings) as h:
        await h.send("LIMITS")
        events = await wait_for(h, lambda found: len(found) >= 2)
        trajectory = await h.trajectory()
        by_call = {m["tool_call_id"]: m["content"] for m in trajectory if m["role"] == "tool"}
        asked = next(m for m in trajectory if m.get("tool_calls"))["tool_calls"]
        tool_results = [by_call[call["id"]] for call in asked]

        spawned, looping, unknown, too_long, no_such, no_parent = tool_results
        assert spawned.startswith("started subagent") and looping.startswith("started subagent")
        too_many = next(
            m["content"]
            for m in trajectory
            if m["role"] == "tool" and m["tool_call_id"] not in [c["id"] for c in asked]
        )
        assert "already has 2 subagents ([subagents] max_children = 2)" in too_many
        assert "cancel_subagent" in too_many
        assert "tools: no_such_tool is not available" in unknown and "choose from:" in unknown
        assert "budget.seconds = 1e+09 is above" in too_long
        assert "[subagents] default_budget_seconds" in too_long
        assert "unknown subagent 'sub-nope'" in no_such
        # A top-level session is not offered report_to_parent; called by name, the
        # policy chain refuses it (tests/test_subagents_scope.py).
        assert "report_to_parent is not among this session's tools" in no_parent

        # max_depth = 1: a child is not sent the family's tools, and calling one by name
        # is refused by the policy chain.
        # Offered = sent with a schema, or (deferred, the default) named in its prompt.
        sent, prompt = model.child_tools["try-spawn"], model.child_prompt["try-spawn"]
        assert "spawn_subagent" not in sent and "spawn_subagent" not in prompt
        assert "shell_exec" in sent
        assert "report_to_parent" in sent or "report_to_parent" in prompt.split("Other tools")[-1]
        children = {
            t["task"]: t
            for t in (await h.client.get("/api/status")).json()["sessions"]["main"]["tasks"]
            if t.get("kind") == "subagent"
        }
        child = await h.trajectory(children["try-spawn"]["session"])
        refusal = next(m["content"] for m in child if m["role"] == "tool")
        assert "spawn_subagent is not among this session's tools" in refusal

        # A budget of two model calls: the child stops after its second, and says why.
        stopped = next(e for e in events if e["id"].split(":")[1] == children["loop"]["task_id"])
        assert (
            "stopped before it finished: its budget of 2 model calls is used up"
            in (stopped["text"])
        )
        assert children["loop"]["state"] == "exhausted"
        loop_requests = [
            r
            for r in model_server.requests
            if "Task: loop" in str(conversation(r.body)[0].get("content"))
        ]
        assert len(loop_requests) == 2
    assert model_server.violations == []
