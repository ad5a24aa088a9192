"""Cancel latency: how fast an urgent "stop!" takes effect (SPEC §5, the cancel strategy).

The daemon runs in-process (tests/daemon_harness.py) against the fake model
server in a process of its own (bench/model_servers.py; `--in-process` runs it
in a thread of this one instead, sharing our GIL). Monotonic stamps compare
either way (CLOCK_MONOTONIC is system-wide). Every iteration uses a fresh
session, and the next starts only once the fake server has gone quiet. All
times start just before the POST of "stop!":

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
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio
import httpx

from bench.common import (
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    percentile,
    print_table,
    quiet_daemon_logs,
    wait_for_shell_pgid,
    wait_until_gone,
)
from bench.model_servers import ModelServer, add_server_flag, model_server
from bench.responders import STOP
from tests.daemon_harness import Harness, daemon_settings, harness
from wakeful.tools.process import group_members


async def timed_send(h: Harness, session: str) -> tuple[float, float]:
    """Send "stop!"; return the moment before sending and the moment the 202 came back."""
    sent = time.monotonic()
    await h.send(STOP, session=session)
    return sent, time.monotonic()


async def stream_iteration(h: Harness, server: ModelServer, i: int) -> dict[str, float]:
    session = f"bench-stream-{i}"
    start = await server.count()
    await h.send(f"write an essay #{i}", session=session)
    await server.await_requests(start + 1)
    await anyio.sleep(0.05)  # let the first chunks stream
    sent, accepted = await timed_send(h, session)
    aborted = await server.await_abort(start)
    again = await server.await_containing(STOP, after=start + 1)
    assert aborted.aborted_at is not None
    return {
        "202": accepted - sent,
        "abort": aborted.aborted_at - sent,
        "again": again.received_at - sent,
    }


async def tool_iteration(h: Harness, server: ModelServer, i: int) -> dict[str, float]:
    session = f"bench-tool-{i}"
    marker = f"wakeful-bench-{uuid.uuid4().hex}"
    start = await server.count()
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
        again = (await server.await_containing(STOP, after=start + 1, timeout_s=10)).received_at
    return {"202": accepted - sent, "again": again - sent, "gone": gone_at[0] - sent}


async def httpx_abort_baseline(client: httpx.AsyncClient, server: ModelServer, i: int) -> float:
    body = {
        "model": "fake-model",
        "stream": True,
        "messages": [{"role": "user", "content": f"write an essay (baseline {i})"}],
    }
    start = await server.count()
    async with client.stream("POST", f"{server.base_url}/chat/completions", json=body) as response:
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


async def main(n: int, in_process: bool) -> None:
    quiet_daemon_logs()
    samples: dict[str, list[float]] = {}

    def add(prefix: str, values: dict[str, float]) -> None:
        for key, value in values.items():
            samples.setdefault(f"{prefix}{key}", []).append(value)

    with tempfile.TemporaryDirectory() as tmp:
        async with (
            model_server("bench.responders:cancel", in_process=in_process) as server,
            harness(daemon_settings(Path(tmp), server.base_url)) as h,
            httpx.AsyncClient() as client,  # one client: creating one costs an SSL context
        ):
            for i in range(n):
                add("stream: ", await stream_iteration(h, server, i))
                await server.await_quiet()
                add("tool: ", await tool_iteration(h, server, i))
                await server.await_quiet()
                add("baseline: ", {"httpx close": await httpx_abort_baseline(client, server, i)})
                add("baseline: ", {"killpg": await anyio.to_thread.run_sync(killpg_baseline)})
            # Report before the daemon shuts down, so a teardown error cannot hide figures.
            report(n, in_process, samples, await server.violations())


def report(
    n: int, in_process: bool, samples: dict[str, list[float]], violations: list[str]
) -> None:
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
    where = "in this process" if in_process else "its own process"
    print(f"cancel latency, {n} iterations each (times from just before sending)")
    print(f"fake model server: {where}")
    print_table(LATENCY_HEADER, [ms_row(label, samples[key]) for key, label in names.items()])
    ratio = percentile(samples["stream: abort"], 50) / percentile(
        samples["baseline: httpx close"], 50
    )
    print(f"stream abort p50 / httpx baseline p50: {ratio:.1f}x")
    print(f"trajectory violations seen by the fake server: {len(violations)}")
    for violation in violations[:5]:
        print("  ", violation)
    sys.stdout.flush()


if __name__ == "__main__":
    parser = add_server_flag(iterations_parser((__doc__ or "").splitlines()[0], 30))
    args = parser.parse_args()
    asyncio.run(main(args.n, args.in_process))
