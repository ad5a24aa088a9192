"""After a crash: a new core over what the killed one left on disk. The normalizer
closes calls that were left open with honest placeholders, a promised late result
that can no longer come is paid with a "lost" notice, and the owed reply follows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import (
    ROOM_CHANNEL,
    Core,
    build_core,
    calls,
    crash_snapshot,
    reply,
    tool_call,
)
from tests.trajectory_validator import validate_openai
from wakeful.core.loop.session_loop import SessionLoop
from wakeful.core.trajectory.placeholders import PLACEHOLDER_MARK
from wakeful.kernel.events import Event, new_event_id

pytestmark = pytest.mark.anyio


async def killed_mid_tool(data_dir: Path, crashed: Path) -> str:
    """A core whose tool call is running when the process dies; the call's id."""
    async with build_core(data_dir) as core:
        call = tool_call("block", {"label": "migration"})
        core.provider.script(calls(call))
        await core.send("run the migration")
        await core.until(lambda: core.tools.block.started == [call.id], "the tool to start")
        await crash_snapshot(data_dir, crashed)
    return call.id


async def answered(core: Core, loop_busy: bool) -> bool:
    messages = await core.trajectory()
    last = messages[-1] if messages else {}
    return not loop_busy and last.get("role") == "assistant" and not last.get("tool_calls")


async def test_a_session_loop_over_the_crashed_store_closes_the_open_call(
    tmp_path: Path,
) -> None:
    """A SessionLoop built by hand (no dispatcher resuming it) over the same store."""
    call_id = await killed_mid_tool(tmp_path / "before", tmp_path / "after")
    async with build_core(tmp_path / "after", resume=False) as core:
        assert [m["role"] for m in await core.trajectory()] == ["user", "assistant"]
        core.provider.script(reply("The migration's outcome is unknown; I will check."))
        loop = SessionLoop("main", core.deps, core.dispatcher.submit_internal)
        core.group.start_soon(loop.run_forever, core.group)
        await core.until(lambda: answered(core, loop.busy), "the owed reply")
        messages = await core.trajectory()
        (request,) = core.provider.requests
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    placeholder = messages[2]
    assert placeholder["tool_call_id"] == call_id
    assert placeholder["content"].startswith(f"{PLACEHOLDER_MARK} No result was recorded")
    assert request.messages[1:-1] == messages[:3]  # the model saw the placeholder
    validate_openai(messages)


async def test_a_promise_the_crash_broke_is_paid_with_a_lost_notice(tmp_path: Path) -> None:
    """A "wait" left the tool running under a placeholder that promised its result;
    the kill lost it. The restarted session hears so, once, through the dispatcher."""
    before, after = tmp_path / "before", tmp_path / "after"
    async with build_core(before) as core:
        call = tool_call("block", {"label": "deploy"})
        core.provider.script(calls(call), reply("Waiting for the deploy."))
        await core.send("deploy it")
        await core.until(lambda: core.tools.block.started == [call.id], "the tool to start")
        await core.send("wait, deploy to staging")
        await core.until(lambda: len(core.provider.requests) == 2, "the correction's request")
        await core.until(lambda: not core.loop().busy, "the run to end")
        await crash_snapshot(before, after)
    async with build_core(after) as core:
        core.provider.script(reply("The deploy was lost; I will check staging."))
        await core.settled()
        messages = await core.trajectory()
        (request,) = core.provider.requests
        events = await core.store.event_log("main")
    lost = [m for m in messages if "lost: the daemon was killed before block" in str(m["content"])]
    assert len(lost) == 1 and call.id in lost[0]["content"]
    assert lost[0] in request.messages
    assert [e.event.id for e in events].count(f"tool:main:{call.id}") == 1
    assert messages[-1]["content"] == "The deploy was lost; I will check staging."
    validate_openai(messages)


async def test_a_clean_stop_leaves_no_promise_and_nothing_to_repair(tmp_path: Path) -> None:
    """Leaving the core (the daemon stopping) closes the running call itself: the tool
    is cancelled and its result says so; the next start repairs nothing and owes only
    the reply."""
    async with build_core(tmp_path) as core:
        call = tool_call("block", {"label": "backup"})
        core.provider.script(calls(call))
        await core.send("back up the disk")
        await core.until(lambda: core.tools.block.started == [call.id], "the tool to start")
    async with build_core(tmp_path) as core:
        stopped = (await core.trajectory())[2]["content"]
        core.provider.script(reply("The backup was cut off by the stop."))
        await core.settled()
        messages = await core.trajectory()
    assert "daemon stop" in stopped and "verify its effects" in stopped
    assert "No result was recorded" not in stopped  # not the restart's repair
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    validate_openai(messages)


async def test_nothing_is_answered_twice_after_a_restart(tmp_path: Path) -> None:
    """A session that had settled: the new core calls no model and sends nothing."""
    async with build_core(tmp_path) as core:
        core.provider.script(reply("Done."))
        await core.send("do it")
        await core.settled()
    async with build_core(tmp_path) as core:
        loop = core.loop()
        await core.until(lambda: loop.at_rest, "the resumed loop to rest")
    assert core.provider.requests == []
    assert core.channel.texts() == []


def room_message(text: str, room: str) -> Event:
    """The owner's message from a chat platform's conversation (as Matrix sends it)."""
    return Event.parse(
        {
            "id": new_event_id("matrix"),
            "kind": "user.input",
            "source": {"type": "matrix", "principal": "@owner:test", "trusted": True},
            "channel": ROOM_CHANNEL,
            "context": {"reply_to": room},
            "content": {"text": text},
            "session": "main",
        }
    )


async def forget_where_the_owner_wrote(core: Core) -> None:
    """As a kill between taking the event and noting where its sender wrote leaves the
    store (the note is the reply's fallback target; CI's kill landed in that gap)."""
    await core.store.put_state("presence:main", None)


async def test_a_run_the_kill_interrupted_answers_where_the_question_came_from(
    tmp_path: Path,
) -> None:
    """Killed while the model was asked about a room's message: the new daemon asks
    again and its reply goes to that room, not to the local chat (CI saw a Matrix
    question answered on the web page after a kill: the loop's memory of what it was
    answering died with it)."""
    before, after = tmp_path / "before", tmp_path / "after"
    async with build_core(before) as core:
        core.provider.script(reply("never sent", hold=True))
        await core.submit(room_message("what is the time?", "!room-1"))
        await core.until(lambda: len(core.provider.requests) == 1, "the model to be asked")
        await forget_where_the_owner_wrote(core)
        await crash_snapshot(before, after)
    async with build_core(after) as core:
        core.provider.script(reply("It is noon."))
        await core.settled()
    assert core.channel.delivered == []
    assert [(m.text, m.address) for m in core.room.delivered] == [("It is noon.", "!room-1")]


async def test_an_owed_reply_goes_where_the_question_came_from(tmp_path: Path) -> None:
    """The reply was recorded but the kill came before the outbox had it: the owed
    reply a restart sends goes to the room that asked."""
    before, after = tmp_path / "before", tmp_path / "after"
    async with build_core(before) as core:
        core.provider.script(reply("It is noon."))
        await core.submit(room_message("what is the time?", "!room-2"))
        await core.settled()
        await core.store.append_messages("main", [{"role": "user", "content": "and now?"}])
        await core.store.append_messages("main", [{"role": "assistant", "content": "Still noon."}])
        await forget_where_the_owner_wrote(core)
        await crash_snapshot(before, after)
    async with build_core(after) as core:
        await core.until(lambda: core.loop().at_rest, "the resumed loop to rest")
    assert core.provider.requests == []
    assert [(m.text, m.address) for m in core.room.delivered] == [("Still noon.", "!room-2")]
