"""Subagents' latency: spawn → the child's first model request, and the child's answer →
its parent's next model request; next to a plain user message → its model request.

The daemon runs in-process (tests/daemon_harness.py) against the fake model server
(its own process unless ``--in-process``; scripted by ``bench.responders:subagents``),
a new parent session per iteration:

- **user → request** (the baseline, same run): ``POST /api/messages`` to an idle
  session → the fake server receives its request.
- **spawn → child's request**: the fake server receives the parent's request whose
  reply calls ``spawn_subagent`` → it receives the child's first request (the
  reply's streaming, the call through the policy chain, the child's record and
  task event committed, its loop started, its request built). Next to it, from the
  same moment, the parent's own next request (the spawn's result): a tool round trip.
- **result → parent's request**: the child's run ends (its ``idle`` feed item,
  after its answer is recorded) → the fake server receives the parent's request
  carrying the ``subagent.result`` (the result read back from the store, its
  event committed, the parent woken). The child answers after a short delay so
  the parent is idle by then.

One unmeasured warm-up precedes each series.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    percentile,
    print_table,
    quiet_daemon_logs,
    wall_to_monotonic,
)
from bench.model_servers import ModelServer, add_server_flag, model_server
from bench.responders import SUBAGENT_MARK
from tests.daemon_harness import FeedWatcher, Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import RecordedRequest
from wakeful.core.feed import ALL_SESSIONS


def is_child(request: RecordedRequest) -> bool:
    users = [m for m in request.body["messages"] if m["role"] == "user"]
    return bool(users) and SUBAGENT_MARK in str(users[0].get("content") or "")


def carries_result(request: RecordedRequest) -> bool:
    return "Subagent sub-" in str(request.body["messages"])


async def user_iteration(h: Harness, server: ModelServer, i: int) -> float:
    start = await server.count()
    sent = time.monotonic()
    await h.send(f"hello #{i}", session=f"bench-plain-{i}")
    await server.await_requests(start + 1)
    return (await server.requests(start))[0].received_at - sent


async def spawn_iteration(
    h: Harness, server: ModelServer, feed: FeedWatcher, i: int
) -> dict[str, float]:
    start = await server.count()
    parent = f"bench-parent-{i}"
    await h.send(f"#{i} spawn", session=parent)
    # The parent's spawn call, the child's request, the parent's tool turn, its result turn.
    await server.await_requests(start + 4, timeout_s=10)
    await server.await_quiet(quiet_s=0.05)
    requests = await server.requests(start, bodies=True)
    spawning = requests[0]
    child = next(r for r in requests if is_child(r))
    tool_turn = next(r for r in requests[1:] if not is_child(r) and not carries_result(r))
    result_turn = next(r for r in requests if not is_child(r) and carries_result(r))
    child_session = f"subagent:{_child_id(result_turn)}"
    idle = next(
        item
        for item in feed.items
        if item.get("session") == child_session
        and item.get("type") == "run"
        and item.get("state") == "idle"
    )
    return {
        "spawn": child.received_at - spawning.received_at,
        "tool": tool_turn.received_at - spawning.received_at,
        "result": result_turn.received_at - wall_to_monotonic(idle["at"]),
    }


def _child_id(request: RecordedRequest) -> str:
    text = str(request.body["messages"])
    return "sub-" + text.split("Subagent sub-", 1)[1][:10]


async def main(n: int, in_process: bool) -> None:
    quiet_daemon_logs()
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            model_server("bench.responders:subagents", in_process=in_process) as server,
            harness(daemon_settings(Path(tmp), server.base_url)) as h,
            watch_feed(h, ALL_SESSIONS) as feed,
        ):
            for i in range(-1, n):  # -1: warm-up
                sample = {"user": await user_iteration(h, server, i)}
                await server.await_quiet(quiet_s=0.05)
                sample.update(await spawn_iteration(h, server, feed, i))
                for key, value in sample.items():
                    samples.setdefault(key, []).extend([value] if i >= 0 else [])
            report(n, in_process, samples, len(await server.violations()))


def report(n: int, in_process: bool, samples: dict[str, Any], violations: int) -> None:
    where = "in this process" if in_process else "its own process"
    print(f"subagent latency, {n} iterations each; fake model server: {where}")
    print_table(
        LATENCY_HEADER,
        [
            ms_row("baseline: user message POST -> model request", samples["user"]),
            ms_row("spawn call's request -> child's first request", samples["spawn"]),
            ms_row("  same moment -> parent's tool-result request", samples["tool"]),
            ms_row("child's run ends -> parent's result request", samples["result"]),
        ],
    )
    base = percentile(samples["user"], 50)
    for key, name in (("spawn", "spawn -> child"), ("result", "result -> parent")):
        print(f"{name} p50 / user message p50: {percentile(samples[key], 50) / base:.1f}x")
    print(f"trajectory violations seen by the fake server: {violations}", flush=True)


if __name__ == "__main__":
    parser = add_server_flag(iterations_parser((__doc__ or "").splitlines()[0], 20))
    args = parser.parse_args()
    asyncio.run(main(args.n, args.in_process))
