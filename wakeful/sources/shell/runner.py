"""Watching one running command: its output into lines, file and monitors.

The command's group is stopped when the command exits (background children
it left would otherwise hold the pipe open and run on unowned); the caller
stops it on cancellation. Output goes to the task's file as it arrives and
is flushed, so read_file sees it while the task still runs.
"""

from __future__ import annotations

from functools import partial
from typing import IO, Protocol

import anyio
import anyio.to_thread
from anyio.abc import ByteReceiveStream, Process

from wakeful.kernel.logging import redact_text
from wakeful.sources.shell.lines import LineSplitter
from wakeful.sources.shell.task import ShellTask
from wakeful.tools.process import stop_group

# After the group is stopped, how long to wait for the rest of the pipe; a
# process that left the group (setsid) could otherwise hold it forever.
DRAIN_S = 2.0


class LineSink(Protocol):
    async def output_line(self, task: ShellTask, line: str) -> None: ...

    async def summarise_suppressed(self, task: ShellTask) -> None: ...


async def supervise(task: ShellTask, proc: Process, sink: LineSink, grace_s: float) -> None:
    """Until the command has exited and its output is read."""
    assert proc.stdout is not None  # started with a pipe
    drained = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(_pump, proc.stdout, task, sink, drained)
        group.start_soon(_summarise, task, sink)
        await proc.wait()
        await stop_group(proc.pid, grace_s)
        with anyio.move_on_after(DRAIN_S):
            await drained.wait()
        group.cancel_scope.cancel()


async def _pump(
    stream: ByteReceiveStream, task: ShellTask, sink: LineSink, drained: anyio.Event
) -> None:
    splitter = LineSplitter()
    opener = partial(open, task.output_file, "a", encoding="utf-8", newline="\n")
    handle = await anyio.to_thread.run_sync(opener)
    try:
        try:
            async for chunk in stream:
                await _take(list(splitter.feed(chunk)), handle, task, sink)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        await _take(list(splitter.close()), handle, task, sink)
    finally:
        handle.close()  # a local file: closing is quick, and must happen even when cancelled
        drained.set()


async def _take(lines: list[str], handle: IO[str], task: ShellTask, sink: LineSink) -> None:
    if not lines:
        return
    # The one place a background command's output enters the daemon: a secret it
    # printed is redacted before the log file, the tail, its events or the model see it.
    lines = [redact_text(line) for line in lines]
    await anyio.to_thread.run_sync(_append, handle, "".join(f"{line}\n" for line in lines))
    for line in lines:
        await sink.output_line(task, line)


def _append(handle: IO[str], text: str) -> None:
    handle.write(text)
    handle.flush()


async def _summarise(task: ShellTask, sink: LineSink) -> None:
    """When the rate limit held lines back, report their count as its window ends."""
    while True:
        await task.suppressed.wait()
        task.suppressed = anyio.Event()
        await anyio.sleep(task.limiter.window_ends_in())
        await sink.summarise_suppressed(task)
