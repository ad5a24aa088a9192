"""The daemon on [llm] provider = "anthropic": thinking kept and replayed, cache share counted.

The SPEC §9 scenarios and the interleaving property run on this provider too
(tests/test_scenarios.py, tests/test_interleavings.py); these are what only
Anthropic has: thinking blocks with signatures and cache breakpoints.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.daemon_harness import harness, settings_for, watch_feed
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_replies import Reply, ToolCallSpec
from tests.test_observability import _scrape, value
from wakeful.core.loop.model_call_log import log_model_call
from wakeful.store.base import ModelCallRecord

pytestmark = pytest.mark.anyio
THINKING = {"thinking_budget_tokens": 2048, "max_output_tokens": 4096}


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake
    assert fake.violations == [], "requests the Messages API would refuse were sent"


async def test_thinking_is_stored_and_replayed_unchanged(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    """Rule 1: the thinking and its signature are in the trajectory and go back byte for byte."""
    server.push(
        Reply(
            reasoning="They want the time; call get_time.", tool_calls=[ToolCallSpec("get_time")]
        ),
        Reply(reasoning="Now say it.", text="It is ten."),
        Reply(text="Still ten."),
    )
    async with harness(settings_for(tmp_path, server, llm=THINKING)) as h:
        async with watch_feed(h) as feed:
            await h.send("what time is it?")
            await feed.wait_for(lambda i: i.get("text") == "It is ten.")
            await h.send("and now?")
            await feed.wait_for(lambda i: i.get("text") == "Still ten.")
        messages = await h.trajectory()
    thinking_turns = [m for m in messages if m["role"] == "assistant" and m.get("reasoning")]
    assert len(thinking_turns) == 2
    stored = thinking_turns[0]["reasoning"]
    assert stored["format"] == "anthropic" and stored["model"] == "fake-model"
    [block] = stored["details"]
    assert block["thinking"] == "They want the time; call get_time." and block["signature"]
    for wire in server.wire_bodies[1:]:  # every later request replays it unchanged
        assistant = [t for t in wire["messages"] if t["role"] == "assistant"]
        assert assistant[0]["content"][0] == block
        assert wire["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert len(server.wire_bodies) == 3


async def test_cached_share_is_counted_per_call(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    """The breakpoints make later calls read the earlier prefix; /metrics shows the share."""
    replies = iter(range(1000))
    server.responder = lambda _body: Reply(text=f"noted {next(replies)}")
    async with harness(settings_for(tmp_path, server)) as h:
        before = await _scrape(h.client)
        async with watch_feed(h) as feed:
            for n in range(3):
                await h.send(f"note {n}")
                await feed.wait_for(lambda i, n=n: i.get("text") == f"noted {n}")
        after = await _scrape(h.client)
    calls = len(server.wire_bodies)
    assert calls == 3
    pairs = zip(server.cache_reads, server.input_totals, strict=True)
    shares = [read / total for read, total in pairs]
    assert shares[0] == 0 and all(share > 0.3 for share in shares[1:])

    def delta(name: str) -> float:
        return value(after, name) - value(before, name)

    assert delta("wakeful_model_cached_share_count") == calls
    assert delta("wakeful_model_cached_share_sum") == pytest.approx(sum(shares), abs=0.01)
    assert value(after, "wakeful_model_tokens_total", type="cached") - value(
        before, "wakeful_model_tokens_total", type="cached"
    ) == sum(server.cache_reads)


def test_the_model_call_log_line_says_the_cached_share() -> None:
    record = ModelCallRecord(
        session="main",
        run_id="r1",
        model="claude",
        latency_s=0.5,
        prompt_tokens=1000,
        completion_tokens=10,
        cached_tokens=900,
        finish_reason="stop",
        outcome="ok",
    )
    with capture_logs() as logs:
        log_model_call(record)
    [line] = logs
    assert line["cached_tokens"] == 900 and line["cached_share"] == 0.9
