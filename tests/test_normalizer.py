"""The trajectory normalizer (SPEC §4): placeholders for missing results, orphans dropped."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.trajectory_validator import validate_both
from wakeful.core.trajectory.normalizer import normalize, open_calls
from wakeful.core.trajectory.placeholders import missing_result_placeholder

Message = dict[str, Any]


def user(text: str = "hi") -> Message:
    return {"role": "user", "content": text}


def call(call_id: str, name: str = "search") -> Message:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def assistant(*calls: Message, content: str | None = None) -> Message:
    message: Message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    elif content is None:
        message["content"] = "done"
    return message


def result(call_id: str, content: str = "ok") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def placeholder(call_id: str, name: str = "search") -> Message:
    return result(call_id, missing_result_placeholder(tool=name, call_id=call_id))


def test_missing_result_gets_placeholder_after_existing_results() -> None:
    """A call without a result gets a placeholder after the existing results, before the rest."""
    messages = [
        user(),
        assistant(call("c1"), call("c2", "fetch"), call("c3")),
        result("c2"),
        user("next"),
    ]
    normalized = normalize(messages)
    assert normalized.messages == [
        user(),
        messages[1],
        result("c2"),
        placeholder("c1"),
        placeholder("c3"),
        user("next"),
    ]
    assert normalized.placeholders == [placeholder("c1"), placeholder("c3")]
    assert normalized.dropped == []
    assert normalized.changed is True
    validate_both(normalized.messages)


def test_trailing_open_calls_are_closed() -> None:
    """Calls left open at the end (a crash mid-tool) get placeholders at the end."""
    messages = [user(), assistant(call("c1", "shell_exec"))]
    normalized = normalize(messages)
    assert normalized.messages == [user(), messages[1], placeholder("c1", "shell_exec")]
    validate_both(normalized.messages)


def test_placeholders_are_deterministic() -> None:
    """Normalizing the same trajectory twice gives byte-identical placeholders."""
    messages = [user(), assistant(call("c1"), call("c2"))]
    assert normalize(messages).messages == normalize(copy.deepcopy(messages)).messages


def test_orphan_result_is_dropped() -> None:
    """A tool result with no preceding call is dropped."""
    messages = [user(), assistant(content="hello"), result("ghost"), user("more")]
    normalized = normalize(messages)
    assert normalized.messages == [user(), assistant(content="hello"), user("more")]
    assert normalized.dropped == [result("ghost")]
    assert normalized.placeholders == []
    validate_both(normalized.messages)


def test_result_after_an_intervening_message_is_dropped() -> None:
    """A result arriving after another message is an orphan: its call got a placeholder."""
    messages = [user(), assistant(call("c1")), user("interrupt"), result("c1", "late")]
    normalized = normalize(messages)
    assert normalized.messages == [user(), messages[1], placeholder("c1"), user("interrupt")]
    assert normalized.dropped == [result("c1", "late")]
    validate_both(normalized.messages)


def test_duplicate_result_is_dropped() -> None:
    """A second result for the same call id is dropped and the first kept."""
    messages = [user(), assistant(call("c1")), result("c1", "first"), result("c1", "second")]
    normalized = normalize(messages)
    assert normalized.messages == messages[:3]
    assert normalized.dropped == [result("c1", "second")]
    validate_both(normalized.messages)


def test_valid_trajectory_is_unchanged() -> None:
    """A valid trajectory comes back equal, with changed False, and the input is not mutated."""
    messages = [
        {"role": "system", "content": "be brief"},
        user(),
        assistant(call("c1"), call("c2"), content="Looking."),
        result("c2"),
        result("c1"),
        assistant(content="Both done."),
        user("thanks"),
    ]
    before = copy.deepcopy(messages)
    normalized = normalize(messages)
    assert normalized.messages == before
    assert normalized.changed is False
    assert messages == before


# --- property: any tool-call tangle normalizes to a valid fixed point ----------


@st.composite
def tangled_trajectories(draw: st.DrawFn) -> list[Message]:
    """A user-first trajectory with arbitrary assistant calls and misplaced tool results."""
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": "system prompt"})
    messages.append(user("start"))
    issued: list[str] = []
    next_id = 0
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["user", "assistant", "tool", "tool", "results"]))
        if kind == "user":
            messages.append(user(draw(st.sampled_from(["a", "more", "stop"]))))
        elif kind == "assistant":
            calls = []
            for _ in range(draw(st.integers(0, 3))):
                next_id += 1
                call_id = f"c{next_id}"
                issued.append(call_id)
                calls.append(call(call_id, draw(st.sampled_from(["search", "fetch"]))))
            content = draw(st.sampled_from([None, "", "thinking"])) if calls else "reply"
            messages.append(assistant(*calls, content=content))
        elif kind == "tool":
            # a result for any id ever issued (valid, late, duplicate) or an unknown one
            choices = [*issued, "ghost", f"c{next_id + 1}"]
            messages.append(result(draw(st.sampled_from(choices))))
        else:
            # answer the latest calls in a random order, some missing
            latest = [m for m in messages if m["role"] == "assistant"]
            calls_of_last = (
                [c["id"] for c in (latest[-1].get("tool_calls") or [])] if latest else []
            )
            answered = draw(st.permutations(calls_of_last))
            keep = draw(st.integers(0, len(answered)))
            messages.extend(result(call_id) for call_id in answered[:keep])
    return messages


def unanswered_calls(messages: list[Message]) -> dict[str, str]:
    """Calls of the last assistant message that still have no result."""
    waiting: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "tool":
            waiting.pop(message.get("tool_call_id", ""), None)
        else:
            waiting = open_calls(message)
    return waiting


@settings(
    max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(tangled_trajectories())
def test_normalize_always_yields_a_valid_fixed_point(messages: list[Message]) -> None:
    """Whatever the tangle, the result passes both API validators and is a fixed point."""
    before = copy.deepcopy(messages)
    normalized = normalize(messages)
    validate_both(normalized.messages)
    assert messages == before, "normalize mutated its input"
    again = normalize(normalized.messages)
    assert again.changed is False
    assert again.messages == normalized.messages
    kept_or_added = len(normalized.messages) - len(normalized.placeholders)
    assert kept_or_added + len(normalized.dropped) == len(messages)
    assert unanswered_calls(normalized.messages) == {}
