"""A background task's declared limit: one timer per task, the ``process.timeout`` event.

The limit is the agent's own estimate (start_shell's ``limit_s``), not a
sandbox limit: past it the session is told, and the task keeps running
unless it was started with ``kill_on_timeout``, in which case it is stopped
like a cancel (its whole process group: TERM, grace, KILL) and its
``shell.exited`` event says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from wakeful.sources.shell import events
from wakeful.sources.shell.task import ShellTask, Stop
from wakeful.tools.process import stop_group

if TYPE_CHECKING:
    from wakeful.sources.shell.manager import ShellTaskManager


async def watch_limit(task: ShellTask, manager: ShellTaskManager) -> None:
    """Sleep until the task ends or passes its limit; then say so (and stop it if asked)."""
    limit_s = task.record.limit_s
    if limit_s is None:
        return
    with anyio.move_on_after(limit_s):
        await task.done.wait()
        return
    if not task.running:
        return
    task.record.timed_out = True
    grace_s = manager.options.grace_s
    await manager.report_quietly(events.timeout_event(task.record, task.runtime_s(), grace_s))
    if task.record.kill_on_timeout and task.running and task.record.pgid is not None:
        task.stop = Stop.TIMEOUT
        await stop_group(task.record.pgid, grace_s)
