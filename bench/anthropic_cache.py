"""Cached-token share of a long session: Anthropic's breakpoints against OpenAI's prefix cache.

The whole daemon runs in-process (tests/daemon_harness.py) for ``--turns``
user messages (every fifth answered with a ``get_time`` call first, so tool
results are in the trajectory too), once on ``[llm] provider = "anthropic"``
against the fake Messages API (tests/fakes/anthropic_server.py), which counts
``cache_read_input_tokens`` as the API does (the longest prefix ending at one
of this request's ``cache_control`` breakpoints that an earlier request
wrote), and once on the OpenAI provider against the fake OpenAI server, where
the share is what OpenAI's automatic cache would give the same requests: the
prefix (tools, then messages, as the prompt has them) shared with the
previous request, as tokens (characters / 4) rounded down to 128-token
steps, nothing below 1,024 tokens.

The Anthropic row's figures are the daemon's own (``/metrics``
``wakeful_model_tokens_total`` and ``wakeful_model_cached_share``), which
must equal the fake's count; the fake's totals are printed beside them.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from bench.common import percentile, print_table, quiet_daemon_logs, run_like_the_daemon
from tests.daemon_harness import harness, settings_for, watch_feed
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_replies import Reply, ToolCallSpec
from tests.fakes.model_server import FakeModelServer
from tests.test_observability import _scrape, value

_CHARS_PER_TOKEN = 4
_OPENAI_MIN_TOKENS, _OPENAI_STEP = 1024, 128


def scripted() -> Any:
    counter = iter(range(100_000))

    def respond(body: dict[str, Any]) -> Reply:
        n = next(counter)
        if body["messages"][-1]["role"] != "tool" and n % 5 == 4:
            return Reply(tool_calls=[ToolCallSpec("get_time")])
        return Reply(text=f"Reply {n}: noted, and here is a sentence of ordinary length.")

    return respond


async def run_session(
    server: FakeModelServer, turns: int, data_dir: Path, **overrides: dict[str, Any]
) -> dict[str, float]:
    """``turns`` user messages through the whole daemon; ``overrides``: config sections."""
    server.responder = scripted()
    async with harness(settings_for(data_dir, server, **overrides)) as h:
        before = await _scrape(h.client)
        async with watch_feed(h) as feed:
            for turn in range(turns):
                seen = len([i for i in feed.items if i.get("type") == "reply"])
                await h.send(f"Turn {turn}: please note this down and carry on.")
                await feed.wait_for(
                    lambda _i, seen=seen: (
                        len([i for i in feed.items if i.get("type") == "reply"]) > seen
                    ),
                    timeout_s=30,
                )
        after = await _scrape(h.client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    return {
        "calls": delta("wakeful_model_calls_total", outcome="ok"),
        "prompt": delta("wakeful_model_tokens_total", type="prompt"),
        "cached": delta("wakeful_model_tokens_total", type="cached"),
        "share_sum": delta("wakeful_model_cached_share_sum"),
        "share_count": delta("wakeful_model_cached_share_count"),
    }


def prompt_order(body: dict[str, Any]) -> str:
    """A chat-completions body in the order the model's prompt has it: tools, then messages."""
    tools = json.dumps(body.get("tools") or [])
    return tools + "".join(json.dumps(message) for message in body.get("messages") or [])


def common_prefix_length(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def openai_prefix_hits(bodies: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Per call, (tokens OpenAI's automatic prefix cache would read, input tokens)."""
    hits: list[tuple[int, int]] = []
    previous = ""
    for request in bodies:
        body = prompt_order(request)
        common = common_prefix_length(previous, body)
        hit = common // _CHARS_PER_TOKEN // _OPENAI_STEP * _OPENAI_STEP
        hits.append((hit if hit >= _OPENAI_MIN_TOKENS else 0, len(body) // _CHARS_PER_TOKEN))
        previous = body
    return hits


def openai_prefix_shares(bodies: list[dict[str, Any]]) -> tuple[list[float], int, int]:
    """Per call, the share OpenAI's automatic prefix cache would read; totals in tokens."""
    hits = openai_prefix_hits(bodies)
    shares = [hit / tokens if tokens else 0.0 for hit, tokens in hits]
    return shares, sum(hit for hit, _ in hits), sum(tokens for _, tokens in hits)


def row(name: str, shares: list[float], cached: float, prompt: float) -> list[str]:
    later = shares[1:] or [0.0]
    return [
        name,
        str(len(shares)),
        f"{100 * percentile(later, 50):.1f}",
        f"{100 * min(later):.1f}",
        f"{100 * cached / prompt if prompt else 0:.1f}",
        f"{int(prompt)}",
    ]


async def main(turns: int) -> None:
    quiet_daemon_logs()
    with tempfile.TemporaryDirectory() as tmp:
        with FakeAnthropicServer() as anthropic_fake:
            daemon = await run_session(anthropic_fake, turns, Path(tmp) / "anthropic")
            assert anthropic_fake.violations == [], anthropic_fake.violations[:3]
        fake_shares = [
            read / total if total else 0.0
            for read, total in zip(
                anthropic_fake.cache_reads, anthropic_fake.input_totals, strict=True
            )
        ]
        with FakeModelServer() as openai_fake:
            await run_session(openai_fake, turns, Path(tmp) / "openai")
            assert openai_fake.violations == [], openai_fake.violations[:3]
        openai_shares, openai_cached, openai_prompt = openai_prefix_shares(
            [r.body for r in openai_fake.requests]
        )
    header = ["session", "calls", "p50 share %", "min share %", "cached/all input %", "input tok"]
    print(
        f"{turns} user turns; share = cached input / all input of one call, calls after the first"
    )
    print_table(
        header,
        [
            row(
                "anthropic, breakpoints (daemon's /metrics)",
                fake_shares,
                daemon["cached"],
                daemon["prompt"],
            ),
            row(
                "anthropic, the fake's own count",
                fake_shares,
                sum(anthropic_fake.cache_reads),
                sum(anthropic_fake.input_totals),
            ),
            row(
                "openai, automatic prefix cache (baseline)",
                openai_shares,
                openai_cached,
                openai_prompt,
            ),
        ],
    )
    mean = daemon["share_sum"] / daemon["share_count"] if daemon["share_count"] else 0.0
    print(
        f"daemon: {int(daemon['calls'])} model calls, mean per-call share "
        f"(wakeful_model_cached_share) {100 * mean:.1f} %"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50)
    run_like_the_daemon(main, parser.parse_args().turns)
