"""Cancel latency: how fast an urgent "stop!" takes effect (SPEC §5, the cancel strategy).

The daemon runs in-process (tests/daemon_harness.py) against the fake model
server (a thread of this process, so monotonic stamps compare). Every
iteration uses a fresh session, and the next starts only once the fake
server has gone quiet. All times start just before the POST of "stop!":

* streaming: the model streams a reply with `hang=True`; measured until the
  server sees the stream closed (`aborted_at`) and until the model is called
  again (next request's `received_at`).
* tool: the model asked for `shell_exec("sleep 600; echo <marker>")`; measured
  until the model is called again with placeholders and until no live,
  non-zombie process is left in the command's process group (a thread polls
  /proc every 0.5 ms; zombies are ignored since PID 1 here reaps nothing).

Baselines from the same run: an httpx client that opens a stream to the same
fake server, reads the first chunk and closes it (close → `aborted_at`), and
SIGTERM to a `sh -c "sleep 600"` group started by this process (killpg →
gone). `POST → 202` is the HTTP round trip of the stop message itself.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench.common import (
    LATENCY_HEADER,
    FakeModelServer,
    group_members,
    iterations_parser,
    ms_row,
    percentile,
    print_table,
    quiet_daemon_logs,
    settle,
    wait_for_shell_pgid,
    wait_until_gone,
)
from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text
from tests.fakes.model_server import Reply, ToolCallSpec

STOP = "stop!"


def responder(body: dict[str, Any]) -> Reply:
    """`essay` hangs mid-stream, `longjob <marker>` runs a long shell command, else text."""
    text = last_user_text(body)
    if STOP not in str(body["messages"]):
        if "essay" in text:
            return Reply(text="PARTIAL " * 5, hang=True)
        if "longjob" in text:
            command = f"sleep 600; echo {text.split()[-1]}"
            return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})])
    return Reply(text="ok")


def first_request_with(server: FakeModelServer, start: int, needle: str) -> int:
    for record in server.requests[start:]:
        if needle in str(record.body["messages"]):
            return record.index
    raise LookupError(needle)


async def timed_send(h: Harness, session: str) -> tuple[float, float]:
    """Send "stop!"; return the moment before sending and the moment the 202 came back."""
    sent = time.monotonic()
    await h.send(STOP, session=session)
    return sent, time.monotonic()


async def stream_iteration(h: Harness, server: FakeModelServer, i: int) -> dict[str, float]:
    session = f"bench-stream-{i}"
    start = len(server.requests)
    await h.send(f"write an essay #{i}", session=session)
    await server.await_requests(start + 1)
    await anyio.sleep(0.05)  # let the first chunks stream
    sent, accepted = await timed_send(h, session)
    aborted = await server.await_abort(start)
    await server.await_requests(start + 2)
    again = server.requests[first_request_with(server, start + 1, STOP)]
    assert aborted.aborted_at is not None
    return {
        "202": accepted - sent,
        "abort": aborted.aborted_at - sent,
        "again": again.received_at - sent,
    }


async def tool_iteration(h: Harness, server: FakeModelServer, i: int) -> dict[str, float]:
    session = f"bench-tool-{i}"
    marker = f"wakeful-bench-{uuid.uuid4().hex}"
    start = len(server.requests)
    await h.send(f"longjob {marker}", session=session)
    pgid = await wait_for_shell_pgid(marker)
    members = group_members(pgid)
    gone_at: list[float] = []

    async def watch() -> None:
        gone_at.append(await anyio.to_thread.run_sync(wait_until_gone, pgid, members))

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        await anyio.sleep(0.01)  # the watcher thread is polling before we send
        sent, accepted = await timed_send(h, session)
        with anyio.fail_after(10):
            while True:
                try:
                    index = first_request_with(server, start + 1, STOP)
                    break
                except LookupError:
                    await server.await_requests(len(server.requests) + 1)
    again = server.requests[index].received_at
    return {"202": accepted - sent, "again": again - sent, "gone": gone_at[0] - sent}


async def httpx_abort_baseline(server: FakeModelServer, i: int) -> float:
    body = {
        "model": "fake-model",
        "stream": True,
        "messages": [{"role": "user", "content": f"write an essay (baseline {i})"}],
    }
    start = len(server.requests)
    async with (
        httpx.AsyncClient(base_url=server.base_url) as client,
        client.stream("POST", "/chat/completions", json=body) as response,
    ):
        async for _chunk in response.aiter_bytes():
            break
        closed = time.monotonic()
    record = await server.await_abort(start)
    assert record.aborted_at is not None
    return record.aborted_at - closed


def killpg_baseline() -> float:
    process = subprocess.Popen(["sh", "-c", "sleep 600; echo baseline"], start_new_session=True)
    time.sleep(0.05)  # let sh start its sleep
    members = group_members(process.pid)
    sent = time.monotonic()
    os.killpg(process.pid, signal.SIGTERM)
    gone = wait_until_gone(process.pid, members)
    process.wait()
    return gone - sent


async def main(n: int) -> None:
    quiet_daemon_logs()
    samples: dict[str, list[float]] = {}

    def add(prefix: str, values: dict[str, float]) -> None:
        for key, value in values.items():
            samples.setdefault(f"{prefix}{key}", []).append(value)

    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.responder = responder
        async with harness(daemon_settings(Path(tmp), server.base_url)) as h:
            for i in range(n):
                add("stream: ", await stream_iteration(h, server, i))
                await settle(server)
                add("tool: ", await tool_iteration(h, server, i))
                await settle(server)
                add("baseline: ", {"httpx close": await httpx_abort_baseline(server, i)})
                add("baseline: ", {"killpg": await anyio.to_thread.run_sync(killpg_baseline)})
        violations = list(server.violations)
    names = {
        "stream: 202": "stream: stop POST -> 202",
        "stream: abort": "(a) stop -> model stream closed",
        "stream: again": "stream: stop -> model called again",
        "tool: 202": "tool: stop POST -> 202",
        "tool: again": "(b) stop -> model called w/ placeholder",
        "tool: gone": "(c) stop -> shell process group gone",
        "baseline: httpx close": "baseline: httpx close -> stream closed",
        "baseline: killpg": "baseline: killpg -> group gone",
    }
    print(f"cancel latency, {n} iterations each (times from just before sending)")
    print_table(LATENCY_HEADER, [ms_row(label, samples[key]) for key, label in names.items()])
    ratio = percentile(samples["stream: abort"], 50) / percentile(
        samples["baseline: httpx close"], 50
    )
    print(f"stream abort p50 / httpx baseline p50: {ratio:.1f}x")
    print(f"trajectory violations seen by the fake server: {len(violations)}")
    for violation in violations[:5]:
        print("  ", violation)


if __name__ == "__main__":
    args = iterations_parser((__doc__ or "").splitlines()[0], 30).parse_args()
    asyncio.run(main(args.n))
