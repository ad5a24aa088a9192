"""The router's three strategies (SPEC §5) against a busy session loop: cancel (a
"stop" or a "wait, …"), queue (drained at the next safe point) and parallel (a
quick question answered beside the run, the main trajectory left alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import build_core, calls, reply, side_reply, side_session, tool_call
from tests.trajectory_validator import validate_openai
from wakeful.core.loop.parallel import SIDE_QUESTION_NOTE
from wakeful.core.trajectory.placeholders import PLACEHOLDER_MARK
from wakeful.core.trajectory.rendering import PARALLEL_NOTE

pytestmark = pytest.mark.anyio


async def test_stop_cancels_the_run_at_once_and_closes_the_open_call(tmp_path: Path) -> None:
    """A "stop" while a tool runs: the call is cancelled and answered by a placeholder
    at once, the model hears the stop in the same run, and the call's real end arrives
    later as its one promised late result."""
    async with build_core(tmp_path, default_reply="Noted.") as core:
        call = tool_call("block", {"label": "build"})
        core.provider.script(calls(call), reply("Stopped."))
        await core.send("build the thing")
        await core.until(lambda: core.tools.block.started == [call.id], "the tool to start")
        stop = await core.send("stop")
        assert core.routed(stop)["strategy"] == "cancel"
        assert core.routed(stop)["stop_tools"] is True
        await core.settled()
        messages = await core.trajectory()
        requests = core.provider.requests
    assert core.tools.block.cancelled == [call.id]  # cancelled, not left running
    assert core.tools.block.finished == []
    assert [m["role"] for m in messages[:4]] == ["user", "assistant", "tool", "user"]
    placeholder = messages[2]
    assert placeholder["tool_call_id"] == call.id
    assert placeholder["content"].startswith(PLACEHOLDER_MARK)
    assert "It was cancelled" in placeholder["content"]
    assert messages[3]["content"].endswith("stop")  # the stop comes next, before any reply
    assert requests[1].messages[1:5] == messages[:4]
    # The call's real end (cancelled) arrives once, as a late result: with the stop in
    # one batch when it was quick enough, else in the next safe point's.
    late = [m for m in messages if "Late result" in str(m["content"])]
    assert len(late) == 1 and call.id in late[0]["content"]
    assert messages[-1]["role"] == "assistant"
    validate_openai(messages)
    for request in requests:
        validate_openai(request.messages)


async def test_stop_mid_stream_discards_the_partial_reply(tmp_path: Path) -> None:
    """Rule 4: text the model streamed before the stop is never recorded."""
    async with build_core(tmp_path) as core:
        (streaming,) = core.provider.script(reply("PARTIAL never recorded", hold=True))
        streaming.deltas = ("PARTIAL ", "never ")
        core.provider.script(reply("Stopped as asked."))
        await core.send("write me an essay")
        await core.until(lambda: streaming.taken.is_set(), "the model call")
        stop = await core.send("stop", kind="user.interrupt")
        assert core.routed(stop)["strategy"] == "cancel"
        await core.settled()
        messages = await core.trajectory()
        discarded = [i for i in core.items if i["type"] == "discarded"]
    assert streaming.cancelled
    assert [m["role"] for m in messages] == ["user", "user", "assistant"]
    assert all("PARTIAL" not in str(m["content"]) for m in messages)
    assert messages[1]["content"].endswith("The user interrupts: stop")
    assert messages[2]["content"] == "Stopped as asked."
    assert [d["chars"] for d in discarded] == [len("PARTIAL never ")]
    assert core.channel.texts() == ["Stopped as asked."]


async def test_wait_interrupts_the_model_but_leaves_the_tool_running(tmp_path: Path) -> None:
    """A "wait, …" cancels without stopping tools: the placeholder says the call still
    runs, the model hears the correction now, and the real result follows as an event."""
    async with build_core(tmp_path) as core:
        call = tool_call("block", {"label": "deploy"})
        core.provider.script(calls(call), reply("Waiting for the deploy."), reply("Deployed."))
        await core.send("deploy it")
        await core.until(lambda: core.tools.block.started == [call.id], "the tool to start")
        wait = await core.send("wait, use the staging server")
        assert core.routed(wait)["strategy"] == "cancel"
        assert core.routed(wait)["stop_tools"] is False
        await core.until(lambda: len(core.provider.requests) == 2, "the correction's request")
        await core.until(lambda: not core.loop().busy, "the run to end")
        assert core.tools.block.cancelled == []  # still running
        core.tools.block.release.set()
        await core.settled()
        messages = await core.trajectory()
    assert core.tools.block.finished == [call.id]
    assert "still running in the background" in messages[2]["content"]
    assert "staging server" in messages[3]["content"]
    late = messages[5]["content"]
    assert "Late result" in late and "released: deploy" in late
    assert messages[-1]["content"] == "Deployed."
    validate_openai(messages)


async def test_a_message_mid_run_is_drained_after_the_tool_result(tmp_path: Path) -> None:
    """Queue: a message during a tool call waits for the next safe point — after the
    tool's result, before the next model call — and joins the same run's next request."""
    async with build_core(tmp_path) as core:
        call = tool_call("block", {"label": "tests"})
        core.provider.script(calls(call), reply("Tests pass, and noted."))
        await core.send("run the tests")
        await core.until(lambda: core.tools.block.started == [call.id], "the tool to start")
        note = await core.send("by the way, the CI is slow today")
        assert core.routed(note)["strategy"] == "queue"
        assert len(core.provider.requests) == 1  # nothing interrupted, nothing asked yet
        core.tools.block.release.set()
        await core.settled()
        messages = await core.trajectory()
        second = core.provider.requests[1]
        recorded = await core.store.model_calls("main")
    assert core.tools.block.cancelled == []
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert messages[2]["content"] == "released: tests"
    assert "CI is slow" in messages[3]["content"]
    assert second.messages[1:-1] == messages[:4]  # result, then the message, in one request
    assert len(core.provider.requests) == 2
    assert len({r.run_id for r in recorded}) == 1  # both calls: one run
    validate_openai(messages)


async def test_a_quick_question_is_answered_beside_the_run(tmp_path: Path) -> None:
    """Parallel: answered at once by a side session while the model is mid-call; the
    main trajectory is not touched until the next safe point, which records the
    question with its answer as a note and calls no model for it."""
    async with build_core(tmp_path) as core:
        (main,) = core.provider.script(reply("Here is the report.", hold=True))
        core.provider.script(side_reply("It is noon."))
        await core.send("write the report")
        await core.until(lambda: main.taken.is_set(), "the main model call")
        before = list(await core.trajectory())
        question = await core.send("what time is it?")
        assert core.routed(question)["strategy"] == "parallel"
        await core.until(lambda: "It is noon." in core.channel.texts(), "the side answer")
        assert await core.trajectory() == before  # the main trajectory is untouched
        assert not main.cancelled
        main.release()
        await core.settled()
        messages = await core.trajectory()
        side = next(r for r in core.provider.requests if side_session(r))
    answer = next(m for m in core.channel.delivered if m.text == "It is noon.")
    assert answer.answers == question
    assert side.session is None and SIDE_QUESTION_NOTE in side.messages[-1]["content"]
    assert "what time is it?" in side.messages[-1]["content"]
    assert side.messages[1:-1] == before  # a snapshot of the main trajectory
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "Here is the report."
    assert messages[2]["content"].startswith(PARALLEL_NOTE)
    assert "It is noon." in messages[2]["content"]
    assert len(core.provider.requests) == 2  # the main call and the side one: no third
    validate_openai(messages)


async def test_events_that_waited_are_drained_together_as_one_batch(tmp_path: Path) -> None:
    """Rule 5: what arrived during a model call is appended at once, marked and
    summarised, and answered by one model call."""
    async with build_core(tmp_path) as core:
        (first,) = core.provider.script(reply("First done.", hold=True))
        core.provider.script(reply("All three handled."))
        await core.send("first task")
        await core.until(lambda: first.taken.is_set(), "the first model call")
        texts = ["add milk to the list", "and eggs", "and call the plumber tomorrow"]
        for text in texts:
            assert core.routed(await core.send(text))["strategy"] == "queue"
        first.release()
        await core.settled()
        messages = await core.trajectory()
        second = core.provider.requests[1]
    assert len(core.provider.requests) == 2
    batch = messages[2:5]
    assert [m["role"] for m in messages] == ["user", "assistant", *["user"] * 3, "assistant"]
    for number, (message, text) in enumerate(zip(batch, texts, strict=True), start=1):
        assert message["content"].startswith(f"[Unprocessed event {number}/3]")
        assert text in message["content"]
    assert "There are 3 unprocessed events above: 3 user messages" in batch[-1]["content"]
    assert second.messages[3:6] == batch
    assert core.channel.texts() == ["First done.", "All three handled."]
