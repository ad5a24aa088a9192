"""After a restart: every task the last run did not report is reported now.

A record still "running" means the daemon died while the task ran: it is
reported *lost* to its session, and if its process group outlived the
daemon, the group is stopped (TERM, grace, KILL) and the report says so —
nothing runs on unowned. A finished record not yet reported (stopped at
shutdown, or the daemon died between the exit and the commit) is reported
too. The end event's id is the same either way, so a report that did reach
the store before a crash is not doubled.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio.to_thread
import structlog

from wakeful.kernel.events import Event
from wakeful.sources.shell import events
from wakeful.sources.shell.manager import ShellTaskManager
from wakeful.sources.shell.records import RUNNING, Loaded, TaskRecord, still_ours
from wakeful.sources.shell.task import Stop
from wakeful.tools.process import group_alive, stop_group

log = structlog.get_logger(__name__)

TAIL_BYTES = 16_384
TAIL_LINES = 20


async def report_unfinished(manager: ShellTaskManager, left: Loaded) -> int:
    """Report every task the previous run left unreported; returns how many.

    ``left``: the records as read before this run started any command (the
    component reads them before it says it started: read later, a command this
    run started would be among them).
    Reported tasks that ended more than ``retain_s`` ago are deleted with
    their output files, so the directory does not grow without bound.
    """
    records, problems = left
    for problem in problems:
        log.warning("unreadable shell task record skipped", problem=problem)
    reported = 0
    expired_before = time.time() - manager.options.retain_s
    for record in records:
        if record.reported:
            if (record.finished_at or record.started_at) < expired_before:
                await manager.records.remove(record)
            continue
        if record.state == RUNNING:
            event = await _mark_lost(record, manager.options.grace_s)
        elif record.reason == Stop.SHUTDOWN.value:
            event = events.stopped_at_shutdown_event(record)
        else:
            event = events.exited_event(record, _known_output(record), 0)
        await manager.records.save(record)
        manager.adopt(manager.new_view_task(record))
        await manager.report(record, event)
        reported += 1
    return reported


async def _mark_lost(record: TaskRecord, grace_s: float) -> Event:
    if record.pgid is not None and still_ours(record) and group_alive(record.pgid):
        await stop_group(record.pgid, grace_s)
        gone = not group_alive(record.pgid)
        record.reason = (
            "Its process group was still running after the restart and has been stopped "
            "(SIGTERM, then SIGKILL)."
            if gone
            else f"Its process group {record.pgid} could not be stopped; check it with ps."
        )
    else:
        record.reason = "None of its processes was still running after the restart."
    log.warning("shell task lost in a restart", task_id=record.task_id, detail=record.reason)
    record.state = "lost"
    record.finished_at = time.time()
    record.duration_s = round(record.finished_at - record.started_at, 3)
    record.last_lines = await anyio.to_thread.run_sync(_file_tail, Path(record.output_file))
    return events.lost_event(record)


def _file_tail(path: Path) -> list[str]:
    """The last lines of the task's output file, reading only its end."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    if len(data) == TAIL_BYTES and size > TAIL_BYTES:
        lines = lines[1:]  # the first is probably a fragment
    return lines[-TAIL_LINES:]


def _known_output(record: TaskRecord) -> str:
    lines = "\n".join(record.last_lines) or "(no output)"
    return f"[its last {len(record.last_lines)} lines]\n{lines}"
