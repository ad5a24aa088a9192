"""The strict trajectory validator accepts what the APIs accept and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from tests.trajectory_validator import (
    TrajectoryError,
    to_anthropic,
    validate_anthropic,
    validate_both,
    validate_openai,
)

Message = dict[str, Any]
TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {}}}]


def call(call_id: str, name: str = "search", arguments: Any = '{"q": "x"}') -> Message:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant_calls(*ids: str) -> Message:
    return {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]}


def result(call_id: str, content: str = "done") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def user(text: str = "hi") -> Message:
    return {"role": "user", "content": text}


SYSTEM: Message = {"role": "system", "content": "be brief"}


def test_valid_trajectory_with_parallel_calls_passes_both() -> None:
    """Two calls answered in any order, then text, satisfy both rule sets."""
    messages = [
        SYSTEM,
        user(),
        assistant_calls("a", "b"),
        result("b"),
        result("a"),
        {"role": "assistant", "content": "found it"},
        user("thanks"),
    ]
    validate_both(messages, TOOLS)


def test_placeholder_then_event_is_valid() -> None:
    """Results followed by a new user event (SPEC §4 rule 3) are valid in both forms."""
    messages = [user(), assistant_calls("a"), result("a", "interrupted"), user("new event")]
    validate_both(messages)
    _, converted = to_anthropic(messages)
    assert [m["role"] for m in converted] == ["user", "assistant", "user"]
    assert [b["type"] for b in converted[2]["content"]] == ["tool_result", "text"]


@pytest.mark.parametrize(
    ("messages", "reason"),
    [
        ([user(), assistant_calls("a")], "no tool result"),
        ([user(), assistant_calls("a", "b"), result("a")], "no tool result"),
        ([user(), result("a")], "orphan"),
        ([user(), assistant_calls("a"), result("a"), result("a")], "duplicate"),
        ([user(), assistant_calls("a"), user("interrupt"), result("a")], "before the tool results"),
        ([user(), assistant_calls("a"), result("a"), assistant_calls("a")], "duplicate tool call"),
        ([{"role": "robot", "content": "x"}], "invalid role"),
        ([user(), {"role": "assistant", "content": None}], "neither content nor tool_calls"),
        ([user(), {"role": "assistant", "content": None, "tool_calls": []}], "non-empty list"),
        ([user(), {"role": "assistant", "tool_calls": [call("a", arguments={"q": 1})]}], "JSON"),
        ([{"role": "user", "content": None}], "string or a non-empty list"),
        ([], "non-empty"),
    ],
)
def test_openai_rejects(messages: list[Message], reason: str) -> None:
    """Each broken trajectory is rejected with a reason naming the problem."""
    with pytest.raises(TrajectoryError, match=reason):
        validate_openai(messages)


def test_openai_error_names_the_message_index() -> None:
    """The error says which message is wrong."""
    with pytest.raises(TrajectoryError) as caught:
        validate_openai([user(), assistant_calls("a"), user("interrupt"), result("a")])
    assert caught.value.index == 2
    assert str(caught.value).startswith("message 2:")


def test_unknown_tool_name_is_rejected_only_when_tools_given() -> None:
    """A call to a function missing from `tools` is an error; without tools it is not checked."""
    messages = [user(), assistant_calls("a"), result("a")]
    messages[1]["tool_calls"][0]["function"]["name"] = "delete_everything"
    validate_openai(messages)
    with pytest.raises(TrajectoryError, match="unknown function 'delete_everything'"):
        validate_openai(messages, TOOLS)


def test_to_anthropic_converts_calls_results_and_system() -> None:
    """System is split out, calls become tool_use with parsed input, results merge into one user."""
    messages = [SYSTEM, user(), assistant_calls("a", "b"), result("a"), result("b", "two")]
    system, converted = to_anthropic(messages)
    assert system == "be brief"
    assert converted[1]["content"][0] == {
        "type": "tool_use",
        "id": "a",
        "name": "search",
        "input": {"q": "x"},
    }
    assert converted[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "done"},
            {"type": "tool_result", "tool_use_id": "b", "content": "two"},
        ],
    }


def test_consecutive_user_messages_merge_for_anthropic() -> None:
    """Two queued events in a row become one Anthropic user turn."""
    _, converted = to_anthropic([user("one"), user("two")])
    assert converted == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        }
    ]


def test_arguments_that_are_not_a_json_object_cannot_become_tool_use() -> None:
    """Anthropic needs an object as input, so invalid JSON arguments are rejected on conversion."""
    messages = [user(), {"role": "assistant", "tool_calls": [call("a", arguments="{oops")]}]
    with pytest.raises(TrajectoryError, match="not valid JSON"):
        to_anthropic(messages)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(use_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": "search", "input": {}}


def tool_result(use_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": "ok"}


def test_anthropic_accepts_a_well_formed_exchange() -> None:
    """User, assistant tool_use, user tool_result then text, assistant: valid."""
    validate_anthropic(
        "sys",
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [text("let me look"), tool_use("a")]},
            {"role": "user", "content": [tool_result("a"), text("and also")]},
            {"role": "assistant", "content": "done"},
        ],
    )


@pytest.mark.parametrize(
    ("messages", "reason"),
    [
        ([{"role": "assistant", "content": "hi"}], "starting with user"),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "alternating"),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": [tool_use("a")]}],
            "never answered",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [tool_use("a")]},
                {"role": "user", "content": "no result"},
            ],
            "not answered",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [tool_use("a")]},
                {"role": "user", "content": [text("first"), tool_result("a")]},
            ],
            "must come first",
        ),
        ([{"role": "user", "content": [tool_result("x")]}], "no tool_use"),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [tool_use("a")]},
                {"role": "user", "content": [tool_result("a"), tool_result("a")]},
            ],
            "duplicate tool_result",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [tool_use("a")]},
                {"role": "user", "content": [tool_result("a")]},
                {"role": "assistant", "content": [tool_use("a")]},
                {"role": "user", "content": [tool_result("a")]},
            ],
            "duplicate tool_use",
        ),
        ([{"role": "user", "content": "   "}], "non-whitespace"),
        ([{"role": "user", "content": []}], "non-empty"),
    ],
)
def test_anthropic_rejects(messages: list[Message], reason: str) -> None:
    """Each rule Anthropic enforces is enforced here too."""
    with pytest.raises(TrajectoryError, match=reason):
        validate_anthropic(None, messages)


def test_validate_both_catches_what_only_anthropic_forbids() -> None:
    """A trajectory starting with an assistant turn is fine for OpenAI but not for Anthropic."""
    messages = [SYSTEM, {"role": "assistant", "content": "hello"}, user()]
    validate_openai(messages)
    with pytest.raises(TrajectoryError, match="starting with user"):
        validate_both(messages)
