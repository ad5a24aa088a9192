"""A run ends where its limits say, and a closed session takes no more work."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.support import FAST_LIMITS, build_core, calls, reply, tool_call
from tests.trajectory_validator import validate_openai
from wakeful.core.trajectory.rules import UNHANDLED_NOTE
from wakeful.store.base import EventStatus

pytestmark = pytest.mark.anyio


async def test_a_run_stops_at_its_model_call_limit_and_the_next_message_resumes(
    tmp_path: Path,
) -> None:
    """[loop] max_model_calls_per_run: a model that keeps calling tools is stopped with
    an alert naming the knob; the session answers the next message."""
    limits = dataclasses.replace(FAST_LIMITS, max_model_calls_per_run=2)
    async with build_core(tmp_path, limits=limits) as core:
        core.provider.script(
            *(calls(tool_call("echo", {"text": f"again {n}"})) for n in range(3)),
        )
        await core.send("loop for ever")
        await core.settled()
        assert len(core.provider.requests) == 2
        assert any("max_model_calls_per_run = 2" in a for a in core.alerts())
        core.provider.script(reply("Stopped looping."))  # after the third scripted call
        await core.send("carry on")
        await core.settled()
        messages = await core.trajectory()
    assert messages[-1]["content"] == "Stopped looping."
    assert len(core.provider.requests) == 4
    validate_openai(messages)


async def test_a_closed_session_stops_its_tools_and_takes_no_more_work(tmp_path: Path) -> None:
    """Sessions.close (a subagent cancelled): the step under way is cut short, its tool
    cancelled, and what arrives later is recorded as not handled, naming the cause."""
    async with build_core(tmp_path) as core:
        call = tool_call("block", {"label": "subtask"})
        core.provider.script(calls(call))
        await core.send("start the subtask")
        await core.until(lambda: core.tools.block.started == [call.id], "the tool to start")
        await core.dispatcher.sessions.close("main", "the parent cancelled this subagent")
        await core.until(lambda: core.tools.block.cancelled == [call.id], "the tool to stop")
        late = await core.send("are you still there?")

        async def recorded_unhandled() -> bool:
            (stored,) = [s for s in await core.store.event_log("main") if s.event.id == late]
            return stored.status is EventStatus.CONSUMED

        await core.until(recorded_unhandled, "the message recorded as not handled")
        # And out of the loop's queue count: a closed loop is at rest again (it was not,
        # before SessionLoop._record_unhandled counted them out).
        await core.settled()
        messages = await core.trajectory()
    assert len(core.provider.requests) == 1  # no model call after the close
    (result,) = [m for m in messages if m.get("tool_call_id") == call.id]
    # Whichever came first: the loop's placeholder naming the cause, or the call's own
    # end (Sessions.close cancels the session's tasks itself, too).
    assert (
        "It was cancelled" in result["content"] or "because it was cancelled" in (result["content"])
    )
    unhandled = [m for m in messages if str(m["content"]).startswith(UNHANDLED_NOTE)]
    assert any(late in m["content"] for m in unhandled)
    assert any("the parent cancelled this subagent" in m["content"] for m in unhandled)
