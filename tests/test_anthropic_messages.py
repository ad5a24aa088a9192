"""The canonical trajectory → Anthropic Messages conversion (wakeful/llm/anthropic_messages.py).

Every converted body is also put through the fake API's rules
(tests/fakes/anthropic_rules.py), so "converted" means "the API would accept it".
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.anthropic_rules import IssuedThinking, request_violations
from wakeful.llm.anthropic_messages import (
    CONVERSATION_START,
    NO_RESULT,
    count_breakpoints,
    to_messages_body,
    tool_input,
)

MODEL = "claude-test"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell_exec",
            "description": "Run a command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]


def call(call_id: str, name: str = "shell_exec", arguments: str = '{"command": "ls"}') -> Any:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def body_of(messages: list[dict[str, Any]], tools: list[Any] | None = None) -> dict[str, Any]:
    converted = to_messages_body(messages, tools if tools is not None else TOOLS, MODEL)
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 100, "messages": converted.messages}
    if converted.system:
        body["system"] = converted.system
    if converted.tools:
        body["tools"] = converted.tools
    return body


def accepted(messages: list[dict[str, Any]], issued: IssuedThinking | None = None) -> Any:
    body = body_of(messages)
    assert request_violations(body, issued or IssuedThinking()) == []
    return body


def without_cache(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]


def test_system_tools_and_a_tool_round_trip() -> None:
    messages = [
        {"role": "system", "content": "You are wakeful."},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": "Looking.", "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    ]
    body = accepted(messages)
    assert without_cache(body["system"]) == [{"type": "text", "text": "You are wakeful."}]
    assert body["tools"][0] == {
        "name": "shell_exec",
        "input_schema": TOOLS[0]["function"]["parameters"],
        "description": "Run a command.",
    }
    assert body["tools"][1]["input_schema"] == {"type": "object"}
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "c1", "name": "shell_exec", "input": {"command": "ls"}},
    ]
    result = without_cache(body["messages"][2]["content"])
    assert result == [{"type": "tool_result", "tool_use_id": "c1", "content": "a.txt"}]


def test_the_input_is_not_changed() -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    tools = copy.deepcopy(TOOLS)
    before = (copy.deepcopy(messages), copy.deepcopy(tools))
    to_messages_body(messages, tools, MODEL)
    assert (messages, tools) == before


def test_results_come_first_and_notes_after_them_in_one_user_turn() -> None:
    """Scenario 3's shape: a tool result, then two user notes: one user turn, results first."""
    messages = [
        {"role": "user", "content": "write the report"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "user", "content": "[Unprocessed event 1/2] Japanese"},
        {"role": "user", "content": "[Unprocessed event 2/2] a web page"},
    ]
    body = accepted(messages)
    last = body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "tool_result", "text", "text"]
    assert [b["text"] for b in last[2:]] == [m["content"] for m in messages[4:]]


def test_a_note_between_the_call_and_its_result_moves_after_the_result() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
        {"role": "user", "content": "a note"},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    body = accepted(messages)
    assert [b["type"] for b in body["messages"][-1]["content"]] == ["tool_result", "text"]


def test_an_unanswered_tool_use_gets_an_error_result() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
        {"role": "user", "content": "and then?"},
    ]
    body = accepted(messages)
    blocks = body["messages"][-1]["content"]
    assert [b.get("tool_use_id") for b in blocks] == ["c1", "c2", None]
    assert blocks[1]["content"] == NO_RESULT and blocks[1]["is_error"] is True


def test_a_result_without_its_tool_use_becomes_text() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok"},
        {"role": "tool", "tool_call_id": "ghost", "content": "stray output"},
    ]
    body = accepted(messages)
    [block] = body["messages"][-1]["content"]
    assert block["type"] == "text" and "ghost" in block["text"] and "stray output" in block["text"]


def test_the_first_message_is_from_the_user() -> None:
    body = accepted([{"role": "system", "content": "s"}, {"role": "assistant", "content": "hi"}])
    assert body["messages"][0]["content"][0]["text"] == CONVERSATION_START


def test_consecutive_assistant_messages_are_merged_and_empty_ones_dropped() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "one"},
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "   "},
        {"role": "user", "content": "next"},
    ]
    body = accepted(messages)
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]
    assert [b["text"] for b in body["messages"][1]["content"]] == ["one", "two"]


def test_a_later_system_message_stays_in_place_as_user_text() -> None:
    messages = [
        {"role": "system", "content": "first"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "budget note"},
    ]
    body = accepted(messages)
    assert without_cache(body["system"]) == [{"type": "text", "text": "first"}]
    assert body["messages"][0]["content"][-1]["text"] == "[system] budget note"


def test_call_ids_from_other_endpoints_are_made_acceptable() -> None:
    odd = "functions.get_time:0"
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call(odd)]},
        {"role": "tool", "tool_call_id": odd, "content": "done"},
    ]
    body = accepted(messages)
    assert body["messages"][1]["content"][0]["id"] == "functions_get_time_0"
    assert body["messages"][2]["content"][0]["tool_use_id"] == "functions_get_time_0"


def test_arguments_that_are_not_an_object_are_kept_as_text() -> None:
    assert tool_input('{"a": 1}') == {"a": 1}
    assert tool_input("") == {}
    assert tool_input("[1, 2]") == {"unparsed_arguments": "[1, 2]"}
    assert tool_input("{not json") == {"unparsed_arguments": "{not json"}


def thinking_turn(model: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("c1")],
        "reasoning": {
            "text": "hmm",
            "format": "anthropic",
            "model": model,
            "details": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
            ],
        },
    }


def test_thinking_blocks_are_replayed_unchanged_to_the_same_model() -> None:
    messages = [
        {"role": "user", "content": "go"},
        thinking_turn(MODEL),
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    issued = IssuedThinking(signatures={"sig-1": "hmm"}, redacted={"opaque"})
    body = accepted(messages, issued)
    assert body["messages"][1]["content"][:2] == messages[1]["reasoning"]["details"]


def test_thinking_blocks_are_dropped_for_another_model_or_format() -> None:
    other_model = thinking_turn("claude-other")
    openrouter = thinking_turn(MODEL)
    openrouter["reasoning"]["format"] = "reasoning_details"
    for turn in (other_model, openrouter):
        messages = [{"role": "user", "content": "go"}, turn]
        messages.append({"role": "tool", "tool_call_id": "c1", "content": "done"})
        body = accepted(messages)
        assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use"]


def test_a_changed_signature_is_what_the_fake_rejects() -> None:
    """The rule the replay test relies on can fail: a changed signature is refused."""
    messages = [
        {"role": "user", "content": "go"},
        thinking_turn(MODEL),
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    issued = IssuedThinking(signatures={"sig-1": "something else"}, redacted={"opaque"})
    problems = request_violations(body_of(messages), issued)
    assert any("Invalid `signature`" in p for p in problems)


def test_breakpoints_on_tools_system_and_the_last_two_user_turns() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "three"},
    ]
    body = accepted(messages)
    assert count_breakpoints(body) == 4
    assert "cache_control" in body["tools"][-1] and "cache_control" not in body["tools"][0]
    assert "cache_control" in body["system"][-1]
    marked = [
        i for i, t in enumerate(body["messages"]) if any("cache_control" in b for b in t["content"])
    ]
    assert marked == [2, 4]


def test_without_tools_or_system_the_breakpoints_stay_within_four() -> None:
    body = body_of([{"role": "user", "content": "only"}], tools=[])
    assert request_violations(body, IssuedThinking()) == []
    assert count_breakpoints(body) == 1
    assert "tools" not in body and "system" not in body


def test_the_previous_request_prefix_is_unchanged_apart_from_markers() -> None:
    """What makes the rolling breakpoints hit: the older turns' bytes do not change."""
    first = [{"role": "system", "content": "s"}, {"role": "user", "content": "one"}]
    second = [*first, {"role": "assistant", "content": "a"}, {"role": "user", "content": "two"}]
    before = body_of(first)["messages"]
    after = body_of(second)["messages"]
    assert without_cache(after[0]["content"]) == without_cache(before[0]["content"])
    assert after[0]["content"][-1]["cache_control"] == {"type": "ephemeral"}


ROLES = st.sampled_from(["user", "assistant_text", "assistant_calls", "system", "blank"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(ROLES, st.integers(0, 2)), min_size=1, max_size=14))
def test_any_canonical_trajectory_converts_to_an_accepted_request(
    shape: list[tuple[str, int]],
) -> None:
    """Whatever order the canonical messages come in, the API would accept the result."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    ids = iter(range(10_000))
    for kind, count in shape:
        if kind == "user":
            messages.append({"role": "user", "content": f"u{next(ids)}"})
        elif kind == "blank":
            messages.append({"role": "user", "content": ""})
        elif kind == "system":
            messages.append({"role": "system", "content": "later"})
        elif kind == "assistant_text":
            messages.append({"role": "assistant", "content": "t"})
        else:
            calls = [call(f"c{next(ids)}") for _ in range(count + 1)]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for answered in calls[:count]:  # the last call may stay unanswered
                messages.append({"role": "tool", "tool_call_id": answered["id"], "content": "r"})
    body = accepted(messages)
    assert count_breakpoints(body) <= 4
    sent = json.dumps(body)
    for message in messages:  # nothing the model said or was told is lost
        for part in message.get("tool_calls") or []:
            assert part["id"] in sent
