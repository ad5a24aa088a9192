"""The dispatcher as the one way in: deduplication, refusal while stopping, one
loop per session, a parallel answer that falls back to the queue, and the
session supervisor that keeps a crashing session from taking the core down."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import build_core, calls, fails, reply, side_session, tool_call
from tests.trajectory_validator import validate_openai
from wakeful.core.front_door import DaemonUnavailable
from wakeful.core.provider import ModelUnavailable
from wakeful.kernel.events import user_message
from wakeful.store.base import EventStatus

pytestmark = pytest.mark.anyio


async def test_the_same_event_twice_is_stored_and_answered_once(tmp_path: Path) -> None:
    async with build_core(tmp_path) as core:
        core.provider.script(reply("Once."))
        event = user_message("hello", event_id="msg:retried-by-the-client")
        first = await core.submit(event)
        again = await core.submit(event)
        await core.settled()
        messages = await core.trajectory()
        duplicates = core.dispatcher.duplicates
    assert (first.duplicate, again.duplicate) == (False, True)
    assert duplicates == 1
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert len(core.provider.requests) == 1


async def test_a_stopping_core_refuses_new_events_but_takes_its_own(tmp_path: Path) -> None:
    """While stopping, the outside is told to retry; a late result is still taken."""
    async with build_core(tmp_path, default_reply="ok") as core:
        core.dispatcher.stopping = True
        with pytest.raises(DaemonUnavailable, match="stopping"):
            await core.send("too late")
        internal = user_message("a follow-up of work already accepted", event_id="msg:inside")
        accepted = await core.dispatcher.submit_internal(internal)
        await core.settled()
        messages = await core.trajectory()
    assert not accepted.duplicate
    assert len(messages) == 2 and "follow-up" in messages[0]["content"]


async def test_sessions_run_side_by_side(tmp_path: Path) -> None:
    """A session held mid-call does not delay another: each has its own loop."""
    async with build_core(tmp_path) as core:
        (held,) = core.provider.script(reply("Main, at last.", hold=True))
        await core.send("a long question")
        await core.until(lambda: held.taken.is_set(), "the main session's call")
        core.provider.script(reply("Other, at once."))
        await core.send("a short one", session="other")
        await core.settled("other")
        assert core.loop("main").busy
        held.release()
        await core.settled("main")
        main, other = await core.trajectory("main"), await core.trajectory("other")
    assert main[-1]["content"] == "Main, at last."
    assert other[-1]["content"] == "Other, at once."
    assert "a short one" not in str(main) and "a long question" not in str(other)
    assert [m.session for m in core.channel.delivered] == ["other", "main"]


async def test_a_parallel_answer_that_fails_falls_back_to_the_queue(tmp_path: Path) -> None:
    """The side session's model call fails: the question is not lost but queued,
    and the main loop answers it at its next safe point."""
    async with build_core(tmp_path) as core:
        (main,) = core.provider.script(reply("Report written.", hold=True))
        core.provider.script(fails(ModelUnavailable("side model down"), when=side_session))
        core.provider.script(reply("It is noon, and the report is done."))
        await core.send("write the report")
        await core.until(lambda: main.taken.is_set(), "the main model call")
        question = await core.send("what time is it?")
        assert core.routed(question)["strategy"] == "parallel"

        async def queued_instead() -> bool:
            (stored,) = [s for s in await core.store.event_log("main") if s.event.id == question]
            return stored.status is EventStatus.PENDING

        await core.until(queued_instead, "the question back in the queue")
        main.release()
        await core.settled()
        messages = await core.trajectory()
        (stored,) = [s for s in await core.store.event_log("main") if s.event.id == question]
    assert stored.strategy == "queue" and "parallel answer failed" in str(stored.reason)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[2]["content"].endswith("what time is it?")
    assert messages[3]["content"] == "It is noon, and the report is done."


async def test_a_crashing_model_quarantines_the_event_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    """A bug (not a ProviderError) crashes the run; its supervisor restarts the loop,
    which retries. After [loop] max_event_crashes runs the event is quarantined, the
    turn closed with a note, the session alerted, and the next message answered."""
    async with build_core(tmp_path, default_reply="ok") as core:
        core.provider.script(*(fails(RuntimeError("provider bug")) for _ in range(3)))
        poison = await core.send("POISON")
        await core.settled()
        (stored,) = [s for s in await core.store.event_log("main") if s.event.id == poison]
        assert stored.status is EventStatus.QUARANTINED
        assert "RuntimeError: provider bug" in str(stored.failure)
        restarts = [a for a in core.alerts() if "restarting it" in a]
        core.provider.script(reply("Hello again."))
        await core.send("hello after the poison")
        await core.settled()
        messages = await core.trajectory()
    assert len(restarts) == 3
    notes = [m for m in messages if "crashed this session 3 times" in str(m["content"])]
    assert len(notes) == 1 and notes[0]["role"] == "assistant"
    alert = [m for m in messages if f"event {poison}" in str(m["content"])]
    assert alert and alert[0]["role"] == "user"  # the system.alert, handled by the model
    assert messages[-1]["content"] == "Hello again."
    validate_openai(messages)


async def test_drain_forces_a_stuck_tool_within_its_bound(tmp_path: Path) -> None:
    """Stopping: a loop that cannot reach a safe point in time is forced — its running
    tool is cancelled and closed with the shutdown placeholder (no late result)."""
    async with build_core(tmp_path) as core:
        call = tool_call("block", {"label": "forever"})
        core.provider.script(calls(call))
        await core.send("run forever")
        await core.until(lambda: core.tools.block.started == [call.id], "the tool to start")
        forced = await core.dispatcher.sessions.drain(bound_s=0.05, cleanup_s=5.0)
        messages = await core.trajectory()
    assert forced == ["main"]
    assert core.tools.block.cancelled == [call.id]
    assert "because the daemon was stopping" in messages[2]["content"]
    assert "will arrive later" not in messages[2]["content"]
    validate_openai(messages)
