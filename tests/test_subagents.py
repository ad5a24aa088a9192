"""Subagents end to end in one daemon: the parent delegates to three children that run
shell commands, is interrupted meanwhile, and integrates every result once; a stop in
the parent ends the children and their process groups; limits refuse with clear errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer
from tests.subagent_model import ASK, DelegatingModel, conversation, poll, spawned_ids
from wakeful.core.trajectory.rules import UNHANDLED_NOTE

pytestmark = pytest.mark.anyio


async def wait_until_text(h: Harness, session: str, needle: str) -> None:
    async def said() -> bool:
        return any(needle in str(m.get("content") or "") for m in await h.trajectory(session))

    await poll(said)


async def true(value: bool) -> bool:
    return value


async def result_events(h: Harness, session: str = "main") -> list[dict[str, Any]]:
    log = await h.daemon.event_log(session)
    return [e for e in log if e["kind"] == "subagent.result"]


async def test_parent_delegates_is_interrupted_and_integrates_three_results(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model = DelegatingModel()
    model.ack_delay_s = 0.15  # the acknowledgement streams for a while: room to interrupt it
    model_server.responder = model
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        async with watch_feed(h) as feed:
            await h.send(ASK)
            await feed.wait_for(lambda i: i.get("type") == "delta")  # the ack is streaming
            await h.send("wait, also tell me which finished first", kind="user.interrupt")
            # The half-written acknowledgement is dropped (rule 4), not recorded.
            await feed.wait_for(lambda i: i.get("type") == "discarded")
            await wait_until_text(h, "main", "ALL DONE: A B C")
        main = await h.trajectory()
        children = spawned_ids(main)
        assert len(children) == 3
        assert "wait, also" in "\n".join(str(m.get("content")) for m in main)
        results = await result_events(h)
        assert sorted(e["id"].split(":")[1] for e in results) == sorted(children)
        assert all(e["strategy"] == "queue" for e in results)
        shown = [m for m in main if "finished: found" in str(m.get("content") or "")]
        assert len(shown) == 3  # each result entered the conversation exactly once
        for child in children:
            trajectory = await h.trajectory(f"subagent:{child}")
            tools = [m for m in trajectory if m["role"] == "tool"]
            assert len(tools) == 1 and "out-" in tools[0]["content"]  # it really ran the shell
        status = (await h.client.get("/api/status")).json()
        listed = status["sessions"]["main"]["tasks"]
        assert {t["task_id"] for t in listed if t.get("kind") == "subagent"} == set(children)
        assert all(t["state"] == "idle" for t in listed if t.get("kind") == "subagent")
    assert model_server.violations == []


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_stopping_the_parent_cancels_children_and_their_process_groups(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model = DelegatingModel(letters="AB", command="echo $$ > pgid-{x}; sleep 60; echo out-{x}")
    model.background = "B"  # B's command is a background shell task; A's a shell_exec call
    model_server.responder = model
    workspace = tmp_path / "workspace"
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        await h.send(ASK)
        pgid_files = [workspace / f"pgid-{x}" for x in "AB"]

        async def written() -> bool:
            return all(p.exists() and p.read_text().strip() for p in pgid_files)

        await poll(written)
        await poll(lambda: result_events(h))  # B answered: its task runs in the background
        pgids = [int((workspace / f"pgid-{x}").read_text()) for x in "AB"]
        assert all(group_alive(p) for p in pgids)
        calls_before = len(model_server.requests)
        await h.send("stop everything", kind="user.interrupt")
        await poll(lambda: true(not any(group_alive(p) for p in pgids)))
        status = (await h.client.get("/api/status")).json()
        children = [t for t in status["sessions"]["main"]["tasks"] if t.get("kind") == "subagent"]
        assert [t["state"] for t in children] == ["cancelled", "cancelled"]
        sessions = {t["task"][-1]: t["session"] for t in children}

        async def late_result_recorded() -> bool:
            # A's cut-short call reports late; its closed session records the result as
            # not handled rather than keeping it pending for ever.
            log = await h.daemon.event_log(sessions["A"])
            return any(e["kind"] == "tool.result" for e in log) and all(
                e["status"] == "consumed" for e in log
            )

        await poll(late_result_recorded)
        child_a = await h.trajectory(sessions["A"])
        placeholder = [m for m in child_a if m["role"] == "tool"][-1]
        assert "cancelled" in placeholder["content"]  # its shell_exec call was cut short
        assert child_a[-1]["role"] == "user"
        assert child_a[-1]["content"].startswith(UNHANDLED_NOTE)
        assert (
            "the subagent was cancelled (its parent main was told to stop)"
            in (child_a[-1]["content"])
        )
        shown = (await h.client.get("/api/status")).json()["sessions"][sessions["A"]]
        assert shown["pending"] == 0
        await anyio.sleep(0.5)  # a closed child must not call the model again
        child_calls = [
            r
            for r in model_server.requests[calls_before:]
            if "[You are a subagent" in str(conversation(r.body)[0].get("content"))
        ]
        assert child_calls == []
        # Only B answered (before the stop: "started in the background"); A never did.
        assert [e["id"].split(":")[1] for e in await result_events(h)] == [
            t["task_id"] for t in children if t["task"].endswith("B")
        ]
    assert model_server.violations == []
