"""Dispatch overhead: event accepted → model request, next to a direct SDK call.

The daemon runs in-process (tests/daemon_harness.py) against the fake model
server in a process of its own (bench/model_servers.py; `--in-process` runs it
in a thread of this one, sharing our GIL). Monotonic stamps compare either way.

* idle: a message to an idle agent, each in a new session; from just before
  the POST /api/messages to the fake server's `received_at` of the request.
* safe point: while `shell_exec` waits on a gate file, a routine note is
  queued; the gate is opened and the tool finishes. Measured from the tool's
  "task done" feed item (its `at`, time.time(), converted to the monotonic
  clock) and from the moment the tool result was committed to the store
  (SqliteStore.append_messages is wrapped in this process to stamp it) to the
  next request's `received_at` (which must carry the result and the note).

Baselines from the same run: `openai.AsyncOpenAI(...).chat.completions.create(
stream=True)` against the same fake server, from the call to `received_at`,
with a two-message payload and with the daemon's own last request (same
messages and tools: the fair comparison for the safe-point figures).
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
    iterations_parser,
    ms_row,
    percentile,
    print_table,
    quiet_daemon_logs,
    wall_to_monotonic,
)
from bench.model_servers import ModelServer, add_server_flag, model_server
from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from wakeful.store.sqlite import SqliteStore

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


async def idle_iteration(h: Harness, server: ModelServer, i: int) -> float:
    start = await server.count()
    sent = time.monotonic()
    await h.send(f"hello #{i}", session=f"bench-idle-{i}")
    await server.await_requests(start + 1)
    return (await server.requests(start))[0].received_at - sent


async def sdk_iteration(client: openai.AsyncOpenAI, server: ModelServer, i: int) -> float:
    start = await server.count()
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
    return (await server.requests(start))[0].received_at - called


async def same_payload_iteration(client: openai.AsyncOpenAI, server: ModelServer) -> float:
    """The SDK sending exactly the daemon's last request (same messages and tools)."""
    start = await server.count()
    body = (await server.requests(start - 1, bodies=True))[0].body
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
    return (await server.requests(start))[0].received_at - called


async def safe_point_iteration(
    h: Harness, server: ModelServer, gate_dir: Path, i: int
) -> tuple[float, float]:
    session, gate, note = f"bench-safe-{i}", gate_dir / f"gate-{i}", f"also note #{i}"
    async with watch_feed(h, session) as feed:
        await h.send(f"run job {gate}", session=session)
        await feed.wait_for(lambda it: it["type"] == "task" and it["state"] == "started")
        await h.send(note, session=session)
        await feed.wait_for(lambda it: it.get("text") == note)
        start = await server.count()
        gate.touch()
        done = await feed.wait_for(lambda it: it["type"] == "task" and it["state"] == "done")
        await server.await_requests(start + 1)
    request = (await server.requests(start, bodies=True))[0]
    check_ran(request.body["messages"], note)
    from_done = request.received_at - wall_to_monotonic(done["at"])
    return from_done, request.received_at - TOOL_WRITTEN[session]


class DidNotHappen(AssertionError):
    """What a row times did not happen: its figure would time something else."""


def check_ran(messages: list[dict[str, Any]], note: str) -> None:
    """The request must carry the command's own output (not a refusal) and the note.

    The command's text is in the assistant's call, so only the tool message counts.
    """
    results = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
    if not any("gate-opened" in r for r in results):
        raise DidNotHappen(f"shell_exec did not run to its end; its result: {results[-1:]}")
    if note not in str(messages):
        raise DidNotHappen("the queued note did not reach the next request")


async def main(n: int, in_process: bool) -> None:
    quiet_daemon_logs()
    stamp_tool_results()
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            model_server("bench.responders:overhead", in_process=in_process) as server,
            openai.AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0) as client,
            # The gates live outside the daemon's data directory: the reviewer refuses
            # commands that touch that directory, and a refusal is not what we time.
            harness(daemon_settings(Path(tmp) / "data", server.base_url)) as h,
        ):
            for i in range(-1, n):  # -1: warm-up
                sample = {"idle": await idle_iteration(h, server, i)}
                await server.await_quiet(quiet_s=0.05)
                sample["sdk"] = await sdk_iteration(client, server, i)
                gates = Path(tmp) / "gates"
                gates.mkdir(exist_ok=True)
                done, written = await safe_point_iteration(h, server, gates, i)
                sample.update(done=done, written=written)
                await server.await_quiet(quiet_s=0.05)
                sample["same"] = await same_payload_iteration(client, server)
                for key, value in sample.items():
                    samples.setdefault(key, []).extend([value] if i >= 0 else [])
            # Report before the daemon shuts down, so a teardown error cannot hide figures.
            report(n, in_process, samples, len(await server.violations()))


def report(n: int, in_process: bool, samples: dict[str, list[float]], violations: int) -> None:
    where = "in this process" if in_process else "its own process"
    print(f"dispatch overhead, {n} iterations each; fake model server: {where}")
    print_table(
        LATENCY_HEADER,
        [
            ms_row("idle: POST sent -> model request", samples["idle"]),
            ms_row("safe point: task done -> next request", samples["done"]),
            ms_row("safe point: result written -> next request", samples["written"]),
            ms_row("baseline: openai SDK call -> request", samples["sdk"]),
            ms_row("baseline: SDK, daemon's own payload -> request", samples["same"]),
        ],
    )
    base, same_base = percentile(samples["sdk"], 50), percentile(samples["same"], 50)
    print(f"idle overhead p50 / baseline p50: {percentile(samples['idle'], 50) / base:.1f}x")
    done = percentile(samples["done"], 50)
    print(f"safe point (task done) p50 / baseline p50: {done / base:.1f}x")
    written = percentile(samples["written"], 50)
    print(f"safe point (result written) p50 / same-payload SDK p50: {written / same_base:.1f}x")
    print(f"trajectory violations seen by the fake server: {violations}", flush=True)


if __name__ == "__main__":
    parser = add_server_flag(iterations_parser((__doc__ or "").splitlines()[0], 30))
    args = parser.parse_args()
    asyncio.run(main(args.n, args.in_process))
