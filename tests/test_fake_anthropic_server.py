"""The fake Messages API refuses, with Anthropic's 400 body, what the real API refuses.

Without this the provider tests could pass against a fake that accepts anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_replies import Reply

EPHEMERAL = {"type": "ephemeral"}
USE = {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "10:00"}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def post(server: FakeAnthropicServer, body: dict[str, Any]) -> httpx.Response:
    full = {"model": "claude-test", "max_tokens": 100, "stream": True, **body}
    return httpx.post(f"{server.base_url}/v1/messages", json=full, timeout=5)


REFUSED = {
    "first message not from the user": (
        {"messages": [{"role": "assistant", "content": "hi"}]},
        "expected role 'user'",
    ),
    "two user turns in a row": (
        {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]},
        "alternating",
    ),
    "an unanswered tool_use": (
        {
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [USE]},
                {"role": "user", "content": "and?"},
            ]
        },
        "not answered",
    ),
    "a tool_result not first": (
        {
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [USE]},
                {"role": "user", "content": [text("note"), RESULT]},
            ]
        },
        "must come first",
    ),
    "a tool_result without its tool_use": (
        {"messages": [{"role": "user", "content": [RESULT]}]},
        "has no tool_use",
    ),
    "a thinking block the server never signed": (
        {
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "x", "signature": "forged"}, USE],
                },
                {"role": "user", "content": [RESULT]},
            ]
        },
        "Invalid `signature`",
    ),
    "five cache breakpoints": (
        {
            "system": [text("s", cache_control=EPHEMERAL)],
            "messages": [
                {
                    "role": "user",
                    "content": [text(f"part {n}", cache_control=EPHEMERAL) for n in range(4)],
                }
            ],
        },
        "A maximum of 4 blocks with cache_control",
    ),
    "a tool_use id the API's pattern refuses": (
        {
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{**USE, "id": "functions.get_time:0"}]},
                {"role": "user", "content": [{**RESULT, "tool_use_id": "functions.get_time:0"}]},
            ]
        },
        "String should match pattern",
    ),
    "no max_tokens": ({"max_tokens": None, "messages": [{"role": "user", "content": "hi"}]}, ""),
    "an empty text block": ({"messages": [{"role": "user", "content": [text("  ")]}]}, "text"),
    "a thinking budget above max_tokens": (
        {
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [{"role": "user", "content": "hi"}],
        },
        "greater than thinking.budget_tokens",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_like_the_api(server: FakeAnthropicServer, case: str) -> None:
    body, reason = REFUSED[case]
    response = post(server, body)
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert reason in error["error"]["message"]
    # Recorded too, so a provider test that sent it fails (the canonical form may add its own).
    assert any(error["error"]["message"] in v for v in server.violations)


def test_a_valid_request_streams_the_documented_events(server: FakeAnthropicServer) -> None:
    server.push(Reply(text="hi there"))
    response = post(server, {"messages": [{"role": "user", "content": "hello"}]})
    assert response.status_code == 200
    kinds = [line[len("event: ") :] for line in response.text.splitlines() if line[:6] == "event:"]
    assert kinds == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert server.violations == []
