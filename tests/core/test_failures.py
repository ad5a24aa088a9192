"""What fails is said honestly and the session goes on: a tool's bug becomes its
error result, a model error ends the run with an alert and the next event still
runs, and "too long" shrinks the request and retries once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import Step, build_core, calls, fails, opened_store, reply, tool_call
from tests.trajectory_validator import validate_openai
from wakeful.core.context.compaction import COMPACTION_PROMPT
from wakeful.core.loop.supervisor import PoisonGate
from wakeful.core.provider import ContextTooLong, ModelRequest, ModelUnavailable
from wakeful.kernel.events import Event, user_message

pytestmark = pytest.mark.anyio


async def test_a_tool_that_raises_gives_an_error_result_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    async with build_core(tmp_path) as core:
        broken = tool_call("explode", {"text": "kaboom"})
        core.provider.script(calls(broken), reply("The tool is broken; I told the owner."))
        await core.send("use the tool")
        await core.settled()
        messages = await core.trajectory()
        second = core.provider.requests[1]
    result = messages[2]
    assert result["tool_call_id"] == broken.id
    assert (
        "explode failed with an unexpected error: RuntimeError: tool bug: kaboom"
        in (result["content"])
    )
    assert result in second.messages  # the model was told, in the same run
    assert messages[-1]["content"] == "The tool is broken; I told the owner."
    validate_openai(messages)


async def test_bad_arguments_are_an_error_result_naming_the_field(tmp_path: Path) -> None:
    async with build_core(tmp_path) as core:
        bad = tool_call("echo", {"text": 5, "loud": True})
        core.provider.script(calls(bad), reply("I will fix the arguments."))
        await core.send("echo five")
        await core.settled()
        result = (await core.trajectory())[2]["content"]
    assert result.startswith("invalid arguments for echo:")
    assert "- text: Input should be a valid string (got 5)" in result
    assert "- loud: unexpected field; the allowed fields are: text" in result


async def test_a_model_error_fails_the_run_and_the_next_event_still_runs(
    tmp_path: Path,
) -> None:
    """Three failures in a row ([loop] max_consecutive_failures) stop the run with an
    alert; nothing partial is recorded; the next message's run answers both."""
    async with build_core(tmp_path) as core:
        first, *_ = core.provider.script(
            *(fails(ModelUnavailable("endpoint down")) for _ in range(3))
        )
        first.deltas = ("half a rep",)  # streamed, then the call failed: discarded
        await core.send("are you there?")
        await core.settled()
        assert await core.trajectory() == [(await core.trajectory())[0]]  # no reply, no part
        assert any("model failed 3 times in a row" in a for a in core.alerts())
        assert [i["chars"] for i in core.items if i["type"] == "discarded"] == [10]
        core.provider.script(reply("Back now."))
        await core.send("hello again")
        await core.settled()
        messages = await core.trajectory()
        outcomes = [c.outcome for c in await core.store.model_calls("main")]
        last = core.provider.requests[-1]
    assert [m["role"] for m in messages] == ["user", "user", "assistant"]
    assert last.messages[1:3] == messages[:2]  # the unanswered message is answered now
    assert sorted(outcomes) == sorted(["error: endpoint down"] * 3 + ["ok"])
    assert core.channel.texts() == ["Back now."]
    validate_openai(messages)


def compaction(request: ModelRequest) -> bool:
    """The one-off call that writes a compaction's summary."""
    return request.session is None and request.messages[0]["content"] == COMPACTION_PROMPT


async def test_too_long_compacts_and_retries_once(tmp_path: Path) -> None:
    """The provider's "too long" is never retried as it was: the history is compacted
    (a summary written by the model) and the request sent once more."""
    async with build_core(tmp_path) as core:
        core.provider.script(reply("One done. " + "Details of the work. " * 100))
        await core.send("first, do one thing: " + "a long brief. " * 100)
        await core.settled()
        core.provider.script(
            fails(ContextTooLong("prompt is too long")),
            Step(text="Did one thing.", when=compaction),
            reply("Two done."),
        )
        await core.send("now do another")
        await core.settled()
        messages = await core.trajectory()
        requests = core.provider.requests
    assert [compaction(r) for r in requests] == [False, False, True, False]
    assert any("Did one thing." in str(m["content"]) for m in requests[3].messages)
    assert len(str(requests[3].messages)) < len(str(requests[1].messages))
    assert messages[-1]["content"] == "Two done."
    assert core.channel.texts()[-1] == "Two done."


async def test_too_long_with_nothing_to_shrink_stops_and_keeps_the_event(
    tmp_path: Path,
) -> None:
    async with build_core(tmp_path) as core:
        core.provider.script(fails(ContextTooLong("prompt is too long")))
        await core.send("summarise everything")
        await core.settled()
        messages = await core.trajectory()
    assert len(core.provider.requests) == 1  # not retried as it was
    assert [m["role"] for m in messages] == ["user"]
    assert any("context cannot fit the model's window" in a for a in core.alerts())
    assert core.channel.texts() == []


async def test_a_crashed_batch_is_taken_one_at_a_time_until_each_of_it_is_settled(
    tmp_path: Path,
) -> None:
    """[first, poison, innocent] crash before consume. The next takes are one event each
    until every one of that batch is answered or quarantined: the innocent one behind
    the poison is counted for the one crashed batch only (it used to share the poison's
    next batch as soon as the first was answered, and crash with it again)."""
    async with opened_store(tmp_path) as store:
        events = [user_message(text, session="main") for text in ("first", "poison", "innocent")]
        for event in events:
            await store.append(event)
        submitted: list[Event] = []

        async def submit(event: Event) -> None:
            submitted.append(event)

        gate = PoisonGate("main", store, 3, submit)

        async def take() -> list[str]:
            return [s.event.content.text for s in await gate.admit(await store.pending("main"))]

        assert await take() == ["first", "poison", "innocent"]
        await gate.before_restart(store_outage=False)  # crashed before consume
        assert await take() == ["first"]
        gate.consumed()
        gate.answered()
        await store.consume("main", [events[0].id], [])
        for _ in range(2):  # the poison alone, twice more
            assert await take() == ["poison"]
            await gate.before_restart(store_outage=False)
        assert await take() == []  # its fourth take: quarantined instead of run
        assert await take() == ["innocent"]
        gate.consumed()
        gate.answered()
        attempts = {s.event.content.text: s.attempts for s in await store.pending("main")}
        assert attempts == {"innocent": 2}
        assert [e.id for e in submitted] == [f"alert:quarantine:{events[1].id}"]
        assert not gate.one_at_a_time
