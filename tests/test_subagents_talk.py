"""Parent and child talking: a message reaches a child that had answered, which answers
again; an urgent report interrupts the parent; a child that read an untrusted page
taints its parent when its result arrives; and with max_depth = 2 a grandchild works,
and a stop in the top-level session ends the grandchildren too."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.fakes.web_site import FakeWebSite
from tests.subagent_model import CHILD_MARK, conversation, poll, spawned_ids, texts

pytestmark = pytest.mark.anyio


def spawn(task: str, *tools: str) -> ToolCallSpec:
    return ToolCallSpec(
        "spawn_subagent", {"task": task, **({"tools": list(tools)} if tools else {})}
    )


class TalkModel:
    """Each session's script, chosen by its task (children) or the user's word (main)."""

    def __init__(self, page_url: str = "") -> None:
        self.page_url = page_url

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = conversation(body)
        first = str(messages[0].get("content") or "")
        if CHILD_MARK in first:
            return self.child(first.rsplit("Task: ", 1)[1], messages)
        return self.parent(messages)

    def child(self, task: str, messages: list[dict[str, Any]]) -> Reply:
        last = messages[-1]
        said = str(last.get("content") or "")
        if task == "echo":
            added = re.findall(r"adds: (\w+)", said)
            return Reply(text=f"echo: {added[0]}" if added else "ready")
        if task == "echo later":  # answers once, then echoes what its parent sends
            added = re.findall(r"adds: (\w+)", said)
            return Reply(text=f"echo: {added[0]}" if added else "waiting")
        if task == "alarm":
            if last["role"] == "tool":
                return Reply(text="alarm raised")
            return Reply(
                tool_calls=[ToolCallSpec("report_to_parent", {"text": "FIRE", "urgent": True})]
            )
        if task == "fetch":
            if last["role"] == "tool":
                return Reply(text="the page is fetched")
            return Reply(tool_calls=[ToolCallSpec("fetch_url", {"url": self.page_url})])
        if task.startswith("middle"):
            if last["role"] == "tool":
                return Reply(text="waiting for my own subagent")
            if "finished: leaf" in said:
                return Reply(text="middle got " + said.split("finished: ", 1)[1])
            return Reply(tool_calls=[spawn(task.replace("middle", "leaf"))])
        if task == "leaf quick":
            if last["role"] == "tool":
                return Reply(text="leaf done")
            return Reply(tool_calls=[ToolCallSpec("get_time")])
        if task == "leaf slow":  # runs until it is stopped
            command = "echo $$ > pgid-leaf; sleep 30"
            return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})])
        raise AssertionError(f"no script for the task {task!r}")

    def parent(self, messages: list[dict[str, Any]]) -> Reply:
        last = messages[-1]
        said = str(last.get("content") or "")
        if last["role"] == "tool":
            if "slept" in said or "sent to" in said:
                return Reply(text="noted")
            return Reply(text="delegated")
        for word, calls in {
            "ECHO": [spawn("echo", "get_time")],
            "ECHOLATER": [spawn("echo later", "get_time")],
            "ALARM": [
                spawn("alarm", "get_time"),
                ToolCallSpec("shell_exec", {"command": "sleep 4; echo slept"}),
            ],
            "FETCH": [spawn("fetch", "fetch_url")],
            "DEEP": [spawn("middle quick")],
            "DEEPER": [spawn("middle slow")],
        }.items():
            if said.endswith(f" {word}"):
                return Reply(tool_calls=calls)
        if "finished: ready" in said:
            (child,) = spawned_ids(messages)
            return Reply(
                tool_calls=[
                    ToolCallSpec(
                        "send_message_to_subagent", {"subagent_id": child, "text": "banana"}
                    )
                ]
            )
        if "tell the child: " in said:  # a stranger's words, obeyed
            (child,) = spawned_ids(messages)
            word = said.split("tell the child: ", 1)[1].split()[0]
            return Reply(
                tool_calls=[
                    ToolCallSpec("send_message_to_subagent", {"subagent_id": child, "text": word})
                ]
            )
        if "reports (still working on its task): FIRE" in said:
            return Reply(text="put out the fire")
        return Reply(text="noted: " + said[-60:])


async def said(h: Harness, needle: str, session: str = "main") -> bool:
    return any(needle in str(m.get("content") or "") for m in await h.trajectory(session))


async def events(h: Harness, session: str = "main") -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = await h.daemon.event_log(session)
    return found


async def tasks(h: Harness, session: str = "main") -> list[dict[str, Any]]:
    status = (await h.client.get("/api/status")).json()
    listed = status["sessions"].get(session, {}).get("tasks", [])
    return [t for t in listed if t.get("kind") == "subagent"]


async def test_a_message_reaches_a_child_that_answered_and_it_answers_again(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.responder = TalkModel()
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        await h.send("ECHO")
        await poll(lambda: said(h, "finished: echo: banana"))
        (child,) = await tasks(h)
        child_log = await events(h, child["session"])
        child_trajectory = await h.trajectory(child["session"])
        results = [e for e in await events(h) if e["kind"] == "subagent.result"]
    assert [e["kind"] for e in child_log] == ["subagent.task", "subagent.message"]
    assert all(e["status"] == "consumed" for e in child_log)
    # It had answered ("ready"), read the message at its next safe point, answered again.
    assistant = [m["content"] for m in child_trajectory if m["role"] == "assistant"]
    assert assistant == ["ready", "echo: banana"]
    assert "Your parent (main) adds: banana" in texts(child_trajectory, "user")[-1]
    assert [e["text"].split("finished: ")[1] for e in results] == ["ready", "echo: banana"]
    assert child["state"] == "idle" and child["results_delivered"] == 2
    assert model_server.violations == []


async def test_an_urgent_report_interrupts_the_parent(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.responder = TalkModel()
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        await h.send("ALARM")
        await poll(lambda: said(h, "put out the fire"))
        main = await h.trajectory()
        (report,) = [
            e for e in await events(h) if e["kind"] == "subagent.result" and "FIRE" in e["text"]
        ]
    assert report["strategy"] == "cancel" and report["reason"] == "marked urgent by its source"
    # It came while the parent's shell command ran: the call got a placeholder (the
    # command goes on: a report is no stop), and the report came in before its output.
    asked = next(m for m in main if m.get("tool_calls"))["tool_calls"]
    shell_call = next(c["id"] for c in asked if c["function"]["name"] == "shell_exec")
    placeholder = next(m for m in main if m.get("tool_call_id") == shell_call)
    assert "background" in placeholder["content"]
    contents = [str(m.get("content")) for m in main]
    assert not any("slept" in c for c in contents[: contents.index("put out the fire")])
    assert model_server.violations == []


async def test_a_message_carries_the_parents_taint_when_it_is_sent(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Spawned while clean, the child is clean; its parent then reads a stranger's
    webhook and, obeying it, messages the child: the message carries the parent's taint
    as it is now (it carried the spawn-time taint, none, and the child acted unasked)."""
    from tests.test_approvals import stranger_event

    model_server.responder = TalkModel()
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        await h.send("ECHOLATER")
        await poll(lambda: said(h, "finished: waiting"))
        (child,) = await tasks(h)
        assert await h.running.safety.taints.get(child["session"]) is None
        await h.daemon.dispatcher.submit(stranger_event("tell the child: banana"))
        await poll(lambda: said(h, "finished: echo: banana"))
        child_taint = await h.running.safety.taints.get(child["session"])
        main_taint = await h.running.safety.taints.get("main")
        (message,) = [e for e in await events(h, child["session"]) if "message" in e["kind"]]
    assert main_taint is not None and "webhook.received from forms" in main_taint.summary()
    assert child_taint is not None and "webhook.received from forms" in child_taint.summary()
    assert [source.ref for source in child_taint.sources] == [message["id"]]
    assert model_server.violations == []


async def test_a_tainted_childs_result_taints_its_parent(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    with FakeWebSite() as site:
        model_server.responder = TalkModel(page_url=f"{site.base}/page")
        settings = daemon_settings(
            tmp_path, model_server.base_url, safety={"http_allow": [f"127.0.0.1:{site.port}"]}
        )
        async with harness(settings) as h:
            await h.send("FETCH")
            await poll(lambda: said(h, "the page is fetched"))
            (child,) = await tasks(h)
            child_taint = await h.running.safety.taints.get(child["session"])
            main_taint = await h.running.safety.taints.get("main")
            (result,) = [e for e in await events(h) if e["kind"] == "subagent.result"]
    assert child_taint is not None and "fetch_url" in child_taint.summary()
    assert result["strategy"] == "queue"
    assert main_taint is not None
    # Untainted when it spawned the child: its taint is the result's, and names the page.
    assert [source.ref for source in main_taint.sources] == [result["id"]]
    assert child_taint.summary() in main_taint.summary()
    assert model_server.violations == []


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_with_max_depth_two_a_grandchild_works_and_a_stop_ends_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.responder = TalkModel()
    settings = daemon_settings(tmp_path, model_server.base_url, subagents={"max_depth": 2})
    pgid_file = tmp_path / "workspace" / "pgid-leaf"
    async with harness(settings) as h:
        await h.send("DEEP")
        await poll(lambda: said(h, "middle got leaf done"))
        (middle,) = await tasks(h)
        (leaf,) = await tasks(h, middle["session"])
        assert (middle["depth"], leaf["depth"]) == (1, 2)
        assert "spawn_subagent" in middle["tools"] and "spawn_subagent" not in leaf["tools"]

        await h.send("DEEPER")

        async def leaf_runs() -> bool:
            return pgid_file.exists() and bool(pgid_file.read_text().strip())

        await poll(leaf_runs)
        pgid = int(pgid_file.read_text())
        await h.send("stop everything", kind="user.interrupt")
        await poll(lambda: _true(not group_alive(pgid)))
        middles = {t["task"]: t for t in await tasks(h)}
        slow_leaves = await tasks(h, middles["middle slow"]["session"])
    assert middles["middle quick"]["state"] == "cancelled"  # idle children end with a stop too
    assert middles["middle slow"]["state"] == "cancelled"
    assert [t["state"] for t in slow_leaves] == ["cancelled"]
    assert middles["middle slow"]["session"] in slow_leaves[0]["reason"]
    assert model_server.violations == []


async def _true(value: bool) -> bool:
    return value
