"""What every request pays before the user's first word, and how much of it is cached.

The whole daemon in-process (tests/daemon_harness.py) with its default tools runs
a ``--turns``-message conversation (every fifth reply a ``get_time`` call first,
as in bench/anthropic_cache.py), once with ``[tools]`` at its default and once
with ``defer = "never"`` (every schema in every request: the baseline, same
run), each on the OpenAI provider and on the Anthropic one (fake servers).

Printed per configuration: the fixed part of the first request — system prompt
plus tool schemas, as JSON characters / 4 (tiktoken is not installed offline;
the ratio is what matters; target ≤ 2,500 tokens) and how many schemas — then
the cached share of input from turn 3 on (target ≥ 90 %): for OpenAI, the prefix
each request shares with the previous one as its automatic cache reads it
(128-token steps from 1,024 tokens); for Anthropic, the fake Messages API's
``cache_read_input_tokens`` (the longest prefix ending at a breakpoint an
earlier request wrote). Both as the per-request minimum and as cached / all
input tokens.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from bench.anthropic_cache import openai_prefix_hits, run_session
from bench.common import print_table, quiet_daemon_logs, run_like_the_daemon
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_server import FakeModelServer

CHARS_PER_TOKEN = 4
FROM_TURN = 3  # the target's: the first turns pay for writing the cache
_TURN = re.compile(r"Turn (\d+):")


def turn_of(body: dict[str, Any]) -> int:
    """The conversation turn a request belongs to: the newest 'Turn N:' it carries."""
    found = _TURN.findall(json.dumps(body.get("messages") or []))
    return int(found[-1]) + 1 if found else 0


def fixed_tokens(body: dict[str, Any]) -> tuple[int, int]:
    """Tokens of the system prompt plus the tools array, and how many tools it has."""
    tools = body.get("tools") or []
    system = body.get("system")  # Anthropic's top level; OpenAI's first message
    if system is None:
        system = body["messages"][0]["content"]
    chars = len(json.dumps(tools)) + len(
        json.dumps(system) if not isinstance(system, str) else system
    )
    return chars // CHARS_PER_TOKEN, len(tools)


def cached_row(
    name: str, fixed: tuple[int, int], shares: list[float], cached: int, total: int
) -> list[str]:
    return [
        name,
        str(fixed[0]),
        str(fixed[1]),
        str(len(shares)),
        f"{100 * min(shares):.1f}" if shares else "-",
        f"{100 * cached / total:.1f}" if total else "-",
        str(total),
    ]


async def openai_row(name: str, turns: int, root: Path, tools: dict[str, Any]) -> list[str]:
    with FakeModelServer() as fake:
        await run_session(fake, turns, root / f"openai-{name}", tools=tools)
        assert fake.violations == [], fake.violations[:3]
        bodies = [r.body for r in fake.requests]
    hits = openai_prefix_hits(bodies)
    late = [hits[i] for i, body in enumerate(bodies) if turn_of(body) >= FROM_TURN]
    return cached_row(
        f"openai, {name}",
        fixed_tokens(bodies[0]),
        [hit / tokens for hit, tokens in late if tokens],
        sum(hit for hit, _ in late),
        sum(tokens for _, tokens in late),
    )


async def anthropic_row(name: str, turns: int, root: Path, tools: dict[str, Any]) -> list[str]:
    with FakeAnthropicServer() as fake:
        await run_session(fake, turns, root / f"anthropic-{name}", tools=tools)
        assert fake.violations == [], fake.violations[:3]
        bodies = [r.body for r in fake.requests]
        reads, totals = list(fake.cache_reads), list(fake.input_totals)
    late = [i for i, body in enumerate(bodies) if turn_of(body) >= FROM_TURN]
    shares = [reads[i] / totals[i] for i in late if totals[i]]
    return cached_row(
        f"anthropic, {name}",
        fixed_tokens(bodies[0]),
        shares,
        sum(reads[i] for i in late),
        sum(totals[i] for i in late),
    )


async def main(turns: int) -> None:
    quiet_daemon_logs()
    configurations = {"default [tools]": {}, 'defer = "never" (baseline)': {"defer": "never"}}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, tools in configurations.items():
            rows.append(await openai_row(name, turns, root, tools))
            rows.append(await anthropic_row(name, turns, root, tools))
    print(
        f"{turns} user turns, default tools; fixed = system prompt + tool schemas of the "
        f"first request (JSON chars / 4); share from turn {FROM_TURN} on"
    )
    header = [
        "session",
        "fixed tok",
        "schemas",
        "requests",
        "min share %",
        "cached/all %",
        "input tok",
    ]
    print_table(header, rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50)
    run_like_the_daemon(main, parser.parse_args().turns)
