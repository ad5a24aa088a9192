"""The request body of a session without reasoning is byte-identical to what
was sent before reasoning was recorded and replayed (prompt caches key on bytes).

``tests/golden/request_without_reasoning.json`` was captured from the provider
before reasoning replay existed; any byte that changes here is a cache miss
for every running session after an upgrade. A deliberate change of a tool's
definition changes it too (recaptured when shell_exec's description began to
name the operator's timeout limit); the diff must show only that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.model_server import FakeModelServer, Reply
from wakeful.llm import ModelRequest, OpenAIProvider
from wakeful.tools.registry import default_registry

GOLDEN = Path(__file__).parent / "golden" / "request_without_reasoning.json"

SESSION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are wakeful. Ünïcode — kept as is."},
    {"role": "user", "content": "[Unprocessed event 1/1] The user asks: list the files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_a1", "content": "a.txt\nb.txt"},
    {"role": "assistant", "content": "There are two files: a.txt and b.txt."},
    {"role": "user", "content": "thanks"},
    {"role": "user", "content": "[status] 1 model call so far"},
]


async def request_body(model_server: FakeModelServer, provider: OpenAIProvider) -> bytes:
    model_server.push(Reply(text="ok"))
    tools = default_registry().definitions()
    await provider.complete(ModelRequest(messages=SESSION, tools=tools))
    return model_server.raw_bodies[-1]


@pytest.mark.anyio
async def test_request_without_reasoning_is_byte_identical(
    model_server: FakeModelServer,
) -> None:
    provider = OpenAIProvider(model_server.base_url, "sk-test", "fake-model", max_retries=0)
    try:
        raw = await request_body(model_server, provider)
    finally:
        await provider.aclose()
    assert raw == GOLDEN.read_bytes()
