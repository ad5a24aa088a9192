"""Anthropic conversion per session: only the new tail converted (MessagesConverter).

The converter must give exactly what a whole conversion gives, whatever the
history did between calls (grew, lost its tail, was rebuilt as equal
objects), and must never change a body it returned earlier: the encoder
(wakeful/llm/request_encoding.py) keeps the last body's turns and reuses
their bytes when they are the same objects.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.anthropic_rules import IssuedThinking, request_violations
from wakeful.core.provider import ModelRequest
from wakeful.core.reasoning import REASONING_KEY
from wakeful.llm.anthropic_messages import MessagesBody, MessagesConverter, to_messages_body
from wakeful.llm.anthropic_provider import AnthropicProvider
from wakeful.llm.request_encoding import SessionEncoders, dumps

MODEL = "claude-test"
TOOLS = [{"type": "function", "function": {"name": "shell_exec", "parameters": {"type": "object"}}}]
Message = dict[str, Any]


def call(call_id: str) -> Any:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "shell_exec", "arguments": "{}"},
    }


def thinking(model: str) -> Any:
    details = [{"type": "thinking", "thinking": "hmm", "signature": f"sig-{model}"}]
    return {"format": "anthropic", "model": model, "details": details}


def as_dict(body: MessagesBody) -> dict[str, Any]:
    return {"system": body.system, "messages": body.messages, "tools": body.tools}


KINDS = st.sampled_from(
    [
        "user",
        "blank",
        "system",
        "assistant_text",
        "assistant_calls",
        "result",
        "orphan_result",
        "thinking",
        "foreign_thinking",
    ]
)


def messages_of(kinds: list[str], ids: list[int]) -> list[Message]:
    """New message objects; results answer the calls made just before them."""
    made: list[Message] = []
    for kind in kinds:
        ids[0] += 1
        n = ids[0]
        if kind == "user":
            made.append({"role": "user", "content": f"u{n}"})
        elif kind == "blank":
            made.append({"role": "user", "content": ""})
        elif kind == "system":
            made.append({"role": "system", "content": f"later {n}"})
        elif kind == "assistant_text":
            made.append({"role": "assistant", "content": f"a{n}"})
        elif kind == "assistant_calls":
            calls = [call(f"c{n}"), call(f"d{n}")]
            made.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif kind == "result":
            made.append({"role": "tool", "tool_call_id": f"c{n - 1}", "content": "r"})
        elif kind == "orphan_result":
            made.append({"role": "tool", "tool_call_id": "nowhere", "content": "lost"})
        else:
            model = MODEL if kind == "thinking" else "another-model"
            made.append({"role": "assistant", "content": "t", REASONING_KEY: thinking(model)})
    return made


STEPS = st.lists(
    st.tuples(st.integers(0, 3), st.lists(KINDS, max_size=5), st.booleans()),
    min_size=1,
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(STEPS)
def test_each_conversion_equals_a_whole_one_and_leaves_earlier_bodies_alone(
    steps: list[tuple[int, list[str], bool]],
) -> None:
    converter = MessagesConverter()
    history: list[Message] = [{"role": "system", "content": "s"}]
    ids = [0]
    returned: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (body, a deep copy of it)
    for dropped, added, rebuilt in steps:
        history = history[: max(1, len(history) - dropped)] + messages_of(added, ids)
        if rebuilt:  # the same history as equal, new objects (a rebuilt stub, a summary)
            history = copy.deepcopy(history)
        body = as_dict(converter.convert(history, TOOLS, MODEL))
        assert body == as_dict(to_messages_body(copy.deepcopy(history), TOOLS, MODEL))
        issued = IssuedThinking()
        issued.signatures[f"sig-{MODEL}"] = "hmm"
        assert request_violations({"model": MODEL, "max_tokens": 9, **body}, issued) == []
        returned.append((body, copy.deepcopy(body)))
        for earlier, snapshot in returned:
            assert earlier == snapshot


def cycle_history(events: int) -> list[Message]:
    history: list[Message] = [{"role": "system", "content": "you are wakeful"}]
    for n in range(events):
        history.append({"role": "user", "content": f"event {n}"})
        history.append({"role": "assistant", "content": f"answer {n}"})
    return history


def test_a_cycle_converts_only_its_new_messages_and_hands_out_the_same_old_turns() -> None:
    """The daemon's cycle: history + status bar, then history + call + result + a new bar."""
    converter = MessagesConverter()
    history = cycle_history(200)
    first = converter.convert([*history, {"role": "user", "content": "[status 1]"}], TOOLS, MODEL)
    assert converter.converted == 401
    reply = {"role": "assistant", "content": None, "tool_calls": [call("c1")]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "done"}
    status = {"role": "user", "content": "[status 2]"}
    second = converter.convert([*history, reply, result, status], TOOLS, MODEL)
    assert converter.converted == 3  # the old status bar undone, three new messages
    # All but the last few turns (the tail and the breakpoint carriers) are the
    # very objects handed out last time: reused as they are, bytes and all.
    shared = [a is b for a, b in zip(first.messages[:-3], second.messages[:-3], strict=True)]
    assert all(shared)
    assert second.messages[-1]["content"][0]["type"] == "tool_result"
    assert second.messages[-1]["content"][-1]["text"] == "[status 2]"


def test_another_model_converts_everything_again() -> None:
    """Thinking is replayed only to the model that produced it: the fold starts over."""
    converter = MessagesConverter()
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "t", REASONING_KEY: thinking(MODEL)},
        {"role": "user", "content": "again"},
    ]
    mine = converter.convert(history, TOOLS, MODEL)
    assert mine.messages[1]["content"][0]["type"] == "thinking"
    other = converter.convert(history, TOOLS, "other-model")
    assert converter.converted == 3
    assert [b["type"] for b in other.messages[1]["content"]] == ["text"]


@pytest.mark.anyio
async def test_the_provider_posts_what_a_whole_conversion_gives() -> None:
    """Per session, the encoded body of each cycle is that of the body converted whole."""
    provider = AnthropicProvider(api_key="unused", model=MODEL)
    encoders = SessionEncoders()
    history = cycle_history(50)
    try:
        for n in range(5):
            history.append({"role": "assistant", "content": None, "tool_calls": [call(f"c{n}")]})
            history.append({"role": "tool", "tool_call_id": f"c{n}", "content": "ok"})
            messages = [*history, {"role": "user", "content": f"[status {n}]"}]
            in_session = ModelRequest(messages=messages, tools=TOOLS, session="main")
            one_off = ModelRequest(messages=copy.deepcopy(messages), tools=TOOLS)
            posted = encoders.encode("main", provider.wire_body(in_session))
            assert posted == dumps(provider.wire_body(one_off))
    finally:
        await provider.aclose()
