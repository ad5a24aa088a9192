"""A session's request body is encoded once per change, byte for byte what a whole encode gives.

The encoder (wakeful/llm/request_encoding.py) is checked against the SDKs' own
JSON encoders, on random bodies and on sequences of requests that grow, are
pruned, compacted and replayed differently; then both providers over real
HTTP: the bytes the fake servers received are the whole encode of the body
the provider shows (``wire_body``), and only the tail was encoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from anthropic._utils._json import openapi_dumps as anthropic_dumps
from hypothesis import given, settings
from hypothesis import strategies as st
from openai._utils._json import openapi_dumps as openai_dumps

from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_server import FakeModelServer, Reply
from tests.test_request_bytes import GOLDEN
from tests.test_request_bytes import SESSION as GOLDEN_SESSION
from wakeful.core.provider import ModelRequest
from wakeful.llm.anthropic_provider import AnthropicProvider
from wakeful.llm.openai_provider import OpenAIProvider
from wakeful.llm.request_encoding import BodyEncoder, SessionEncoders, dumps
from wakeful.tools.registry import default_registry

Message = dict[str, Any]

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
MESSAGES = st.lists(st.dictionaries(st.text(max_size=8), JSON, max_size=4), max_size=6)


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def body(messages: list[Message], **fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": messages, "stream": True, **fields}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["append", "replace", "drop_front"]), MESSAGES), max_size=6)
)
def test_every_encode_is_the_sdks_whole_encode(steps: list[tuple[str, list[Message]]]) -> None:
    """Whatever happens to the messages between requests (they grow, an item is replaced,
    the front is dropped as a compaction does), the bytes are the SDKs' encode of the body."""
    encoder = BodyEncoder()
    messages: list[Message] = []
    tools: Any = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    for action, items in steps:
        if action == "append":
            messages = [*messages, *items]
        elif action == "replace" and messages:
            messages = [*messages[:-1], *items] if items else messages[1:]
        else:
            messages = [*items, *messages[len(items) + 1 :]]
        tools = [*tools, *items[:1]]
        sent = body(list(messages), tools=tools)
        encoded = encoder.encode(sent)
        assert encoded == openai_dumps(sent) == anthropic_dumps(sent)


@given(JSON)
def test_dumps_is_the_sdks_encoder(value: Any) -> None:
    assert dumps(value) == openai_dumps(value) == anthropic_dumps(value)


def test_not_a_number_is_refused_as_the_sdks_refuse_it() -> None:
    with pytest.raises(ValueError):
        BodyEncoder().encode(body([user("x")], temperature=float("nan")))
    with pytest.raises(ValueError):
        openai_dumps({"temperature": float("nan")})


def history(n: int) -> list[Message]:
    return [user(f"message {i}: " + "lorem ipsum " * 10) for i in range(n)]


def test_a_grown_request_encodes_only_its_tail() -> None:
    """The previous request's messages but its status bar are reused; tools too."""
    encoder = BodyEncoder()
    messages = history(100)
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    encoder.encode(body([*messages, user("[status] 1")], tools=tools))
    messages.append(user("the new event"))
    sent = body([*messages, user("[status] 2")], tools=list(tools))
    assert encoder.encode(sent) == dumps(sent)
    stats = encoder.stats
    assert (stats.reused_items, stats.encoded_items) == (100, 2)
    assert stats.encoded_fields == 0  # model, stream and the (equal) tools: kept


def test_a_pruned_or_compacted_prefix_is_encoded_again_from_the_change() -> None:
    """A stub in place of an old tool result re-encodes from that message on; a summary
    in front of fewer messages (a compaction) re-encodes everything."""
    encoder = BodyEncoder()
    messages = history(50)
    encoder.encode(body(messages))
    pruned = [
        *messages[:20],
        {**messages[20], "content": "[pruned to save context]"},
        *messages[21:],
    ]
    sent = body(pruned)
    assert encoder.encode(sent) == dumps(sent)
    assert (encoder.stats.reused_items, encoder.stats.encoded_items) == (20, 30)
    compacted = [user("[Summary of the earlier conversation] ..."), *messages[40:]]
    sent = body(compacted)
    assert encoder.encode(sent) == dumps(sent)
    assert (encoder.stats.reused_items, encoder.stats.encoded_items) == (0, 11)
    # The same request again, rebuilt as new but equal objects: nothing is encoded.
    sent = body([dict(m) for m in compacted])
    assert encoder.encode(sent) == dumps(sent)
    assert encoder.stats.encoded_items == 0


def test_sessions_are_kept_apart_and_one_off_calls_keep_nothing() -> None:
    encoders = SessionEncoders(max_sessions=2)
    a, b = body(history(5)), body(history(7))
    assert encoders.encode("a", a) == dumps(a)
    assert encoders.encode("b", b) == dumps(b)
    assert encoders.encode(None, a) == dumps(a)  # a summary, a side session
    assert encoders.encode("a", a) == dumps(a)
    stats = encoders.stats("a")
    assert stats is not None and stats.reused_items == 5
    encoders.encode("c", b)  # the least recently used ("b") goes
    assert encoders.stats("b") is None and encoders.stats("a") is not None


# --- both providers, over real HTTP -------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The time.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


def tool_step(n: int, reasoning_model: str) -> list[Message]:
    """An assistant tool call (with recorded reasoning) and its result."""
    call_id = f"call_{n}"
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                }
            ],
            "reasoning": {
                "text": f"think {n}",
                "format": "reasoning_content",
                "model": reasoning_model,
            },
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"10:0{n} UTC " + "x" * 300},
    ]


def session_requests(reasoning_model: str) -> Iterator[tuple[str, list[Message]]]:
    """A session's requests as the loop builds them: (what changed, messages)."""
    system = {"role": "system", "content": "You are wakeful."}
    trajectory: list[Message] = [user("hello")]
    for n in range(3):
        trajectory += tool_step(n, reasoning_model)
    yield "first", [system, *trajectory, user("[status] 1")]
    trajectory += tool_step(3, reasoning_model)
    yield "grown", [system, *trajectory, user("[status] 2")]
    stubbed = {**trajectory[2], "content": "[pruned to save context]"}
    yield "pruned", [system, *trajectory[:2], stubbed, *trajectory[3:], user("[status] 3")]


@pytest.mark.anyio
async def test_openai_provider_posts_the_whole_encode_and_encodes_only_changes() -> None:
    """Over HTTP: each body is the whole encode of wire_body; the grown request encoded its
    tail only, the pruned one from the stub on, and a change of model (whose reasoning is
    then not replayed) re-encoded every message that carried reasoning."""
    with FakeModelServer(reasoning_rules="deepseek") as server:
        provider = OpenAIProvider(server.base_url, "sk-test", "fake-model", max_retries=0)
        try:
            for step, messages in session_requests("fake-model"):
                server.push(Reply(text="ok"))
                request = ModelRequest(messages, TOOLS, session="main")
                await provider.complete(request)
                assert server.raw_bodies[-1] == openai_dumps(provider.wire_body(request)), step
                stats = provider._encoders.stats("main")
                assert stats is not None
                if step == "grown":
                    assert stats.encoded_items == 3  # the new call, its result, the status bar
                if step == "pruned":
                    assert stats.reused_items == 3  # system, hello, the first call
            assert b'"reasoning_content":"think 0"' in server.raw_bodies[-1]
            # Another model: the old model's reasoning is no longer replayed.
            server.push(Reply(text="ok"))
            request = ModelRequest(messages, TOOLS, model="other-model", session="main")
            await provider.complete(request)
            assert server.raw_bodies[-1] == openai_dumps(provider.wire_body(request))
            assert b"reasoning_content" not in server.raw_bodies[-1]
            stats = provider._encoders.stats("main")
            assert stats is not None and stats.reused_items == 2  # system and hello
        finally:
            await provider.aclose()
        # (The last request breaks DeepSeek's rule on purpose: its reasoning is not replayed.)
        assert [v for v in server.violations if not v.startswith("request 3:")] == []


@pytest.mark.anyio
async def test_anthropic_provider_posts_the_whole_encode_and_encodes_only_changes() -> None:
    """The Messages API body is rebuilt as new objects on every call (turns, rolling cache
    breakpoints): equal turns are still reused, and the bytes are the whole encode."""
    with FakeAnthropicServer() as server:
        provider = AnthropicProvider(
            api_key="sk-ant-test", model="claude-test", base_url=server.base_url, max_retries=0
        )
        try:
            for step, messages in session_requests("claude-test"):
                server.push(Reply(text="ok"))
                request = ModelRequest(messages, TOOLS, session="main")
                await provider.complete(request)
                assert server.raw_bodies[-1] == anthropic_dumps(provider.wire_body(request)), step
                stats = provider._encoders.stats("main")
                assert stats is not None
                if step == "grown":
                    # The turns before the previous breakpoint are kept; from there on
                    # (the moved rolling pair, the new turns) encoded.
                    assert stats.reused_items >= 4 and stats.encoded_items <= 5
                    assert stats.encoded_fields == 0  # tools and system: equal, kept
        finally:
            await provider.aclose()
        assert server.violations == []


@pytest.mark.anyio
async def test_the_golden_request_comes_out_the_same_when_encoded_on_top_of_an_earlier_one(
    model_server: FakeModelServer,
) -> None:
    """tests/golden/request_without_reasoning.json, sent as the second request of a session
    (its prefix kept from the first, the tail encoded): the same bytes."""
    tools = default_registry().definitions()
    earlier = [*GOLDEN_SESSION[:-2], {"role": "user", "content": "[status] 0 model calls so far"}]
    provider = OpenAIProvider(model_server.base_url, "sk-test", "fake-model", max_retries=0)
    try:
        for messages in (earlier, GOLDEN_SESSION):
            model_server.push(Reply(text="ok"))
            await provider.complete(ModelRequest(list(messages), tools, session="main"))
    finally:
        await provider.aclose()
    stats = provider._encoders.stats("main")
    assert stats is not None and stats.reused_items == len(earlier) - 1
    assert model_server.raw_bodies[-1] == GOLDEN.read_bytes()
