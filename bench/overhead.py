"""Dispatch overhead: event accepted → model request, next to a direct SDK call.

The daemon runs in-process (tests/daemon_harness.py) against the fake model
server (a thread of this process, so monotonic stamps compare).

* idle: a message to an idle agent, each in a new session; from just before
  the POST /api/messages to the fake server's `received_at` of the request.
* safe point: while `shell_exec` waits on a gate file, a routine note is
  queued; the gate is opened and the tool finishes. Measured from the tool's
  "task done" feed item (its `at`, time.time(), converted to the monotonic
  clock) and from the moment the tool result was committed to the store
  (SqliteStore.append_messages is wrapped in this process to stamp it) to the
  next request's `received_at` (which must carry the result and the note).

Baseline from the same run: `openai.AsyncOpenAI(...).chat.completions.create(
stream=True)` against the same fake server, from the call to `received_at`.
One unmeasured warm-up precedes each series.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import openai

from bench.common import (
    LATENCY_HEADER,
    FakeModelServer,
    iterations_parser,
    ms_row,
    percentile,
    print_table,
    quiet_daemon_logs,
    settle,
    wall_to_monotonic,
)
from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text, watch_feed
from tests.fakes.model_server import Reply, ToolCallSpec
from wakeful.daemon.store.sqlite import SqliteStore

TOOL_WRITTEN: dict[str, float] = {}  # session → monotonic moment its tool result was committed


def stamp_tool_results() -> None:
    original = SqliteStore.append_messages

    async def timed(
        self: SqliteStore,
        session: str,
        messages: list[dict[str, Any]],
        meta: dict[str, Any] | None = None,
    ) -> None:
        await original(self, session, messages, meta)
        if any(m.get("role") == "tool" for m in messages):
            TOOL_WRITTEN.setdefault(session, time.monotonic())

    SqliteStore.append_messages = timed  # type: ignore[method-assign]


def responder(body: dict[str, Any]) -> Reply:
    """`run job <gate>` starts a command that waits for the gate file; anything else: text."""
    text = last_user_text(body)
    if "run job" in text and not any(m["role"] == "tool" for m in body["messages"]):
        command = f"while [ ! -e {text.split()[-1]} ]; do sleep 0.01; done; echo finished"
        return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})])
    return Reply(text="ok")


async def idle_iteration(h: Harness, server: FakeModelServer, i: int) -> float:
    start = len(server.requests)
    sent = time.monotonic()
    await h.send(f"hello #{i}", session=f"bench-idle-{i}")
    await server.await_requests(start + 1)
    return server.requests[start].received_at - sent


async def sdk_iteration(client: openai.AsyncOpenAI, server: FakeModelServer, i: int) -> float:
    start = len(server.requests)
    messages: list[Any] = [
        {"role": "system", "content": "You are a benchmark."},
        {"role": "user", "content": f"hello #{i}"},
    ]
    called = time.monotonic()
    stream = await client.chat.completions.create(
        model="fake-model", messages=messages, stream=True
    )
    async for _chunk in stream:
        pass
    return server.requests[start].received_at - called


async def same_payload_iteration(client: openai.AsyncOpenAI, server: FakeModelServer) -> float:
    """The SDK sending exactly the daemon's last request (same messages and tools)."""
    body = server.requests[-1].body
    start = len(server.requests)
    called = time.monotonic()
    stream = await client.chat.completions.create(
        model="fake-model",
        messages=body["messages"],
        tools=body["tools"],
        stream=True,
        stream_options={"include_usage": True},
    )
    async for _chunk in stream:
        pass
    return server.requests[start].received_at - called


async def safe_point_iteration(
    h: Harness, server: FakeModelServer, gate_dir: Path, i: int
) -> tuple[float, float]:
    session, gate, note = f"bench-safe-{i}", gate_dir / f"gate-{i}", f"also note #{i}"
    async with watch_feed(h, session) as feed:
        await h.send(f"run job {gate}", session=session)
        await feed.wait_for(lambda it: it["type"] == "task" and it["state"] == "started")
        await h.send(note, session=session)
        await feed.wait_for(lambda it: it.get("text") == note)
        start = len(server.requests)
        gate.touch()
        done = await feed.wait_for(lambda it: it["type"] == "task" and it["state"] == "done")
        await server.await_requests(start + 1)
    request = server.requests[start]
    assert note in str(request.body["messages"]) and "finished" in str(request.body["messages"])
    from_done = request.received_at - wall_to_monotonic(done["at"])
    return from_done, request.received_at - TOOL_WRITTEN[session]


async def main(n: int) -> None:
    quiet_daemon_logs()
    stamp_tool_results()
    idle: list[float] = []
    sdk: list[float] = []
    same: list[float] = []
    from_done: list[float] = []
    from_written: list[float] = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.responder = responder
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
        async with client, harness(daemon_settings(Path(tmp), server.base_url)) as h:
            for i in range(-1, n):  # -1: warm-up
                sample = await idle_iteration(h, server, i)
                await settle(server, quiet_s=0.05)
                baseline = await sdk_iteration(client, server, i)
                done, written = await safe_point_iteration(h, server, Path(tmp), i)
                await settle(server, quiet_s=0.05)
                same_payload = await same_payload_iteration(client, server)
                if i >= 0:
                    idle.append(sample)
                    sdk.append(baseline)
                    from_done.append(done)
                    from_written.append(written)
                    same.append(same_payload)
        violations = len(server.violations)
    print(f"dispatch overhead, {n} iterations each")
    print_table(
        LATENCY_HEADER,
        [
            ms_row("idle: POST sent -> model request", idle),
            ms_row("safe point: task done -> next request", from_done),
            ms_row("safe point: result written -> next request", from_written),
            ms_row("baseline: openai SDK call -> request", sdk),
            ms_row("baseline: SDK, daemon's own payload -> request", same),
        ],
    )
    base = percentile(sdk, 50)
    print(f"idle overhead p50 / baseline p50: {percentile(idle, 50) / base:.1f}x")
    print(f"safe point (task done) p50 / baseline p50: {percentile(from_done, 50) / base:.1f}x")
    same_base = percentile(same, 50)
    print(
        "safe point (result written) p50 / same-payload SDK p50: "
        f"{percentile(from_written, 50) / same_base:.1f}x"
    )
    print(f"trajectory violations seen by the fake server: {violations}")


if __name__ == "__main__":
    args = iterations_parser((__doc__ or "").splitlines()[0], 30).parse_args()
    asyncio.run(main(args.n))
