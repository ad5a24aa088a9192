"""The daemon's background shell tasks: start, watch, report, cancel.

Every task runs in the manager's task group, so none outlives the daemon:
at shutdown each is cancelled, its process group stopped (TERM, grace,
KILL) and its record marked "cancelled" — reported to its session after the
next start, since no event can be committed while the daemon stops. Events
go only through ``submit``, the dispatcher.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import Process, TaskGroup

from wakeful.kernel.events import Event
from wakeful.safety.sandbox import NO_SANDBOX, Sandbox
from wakeful.sources.shell import events
from wakeful.sources.shell.limits import watch_limit
from wakeful.sources.shell.lines import OutputTail, cut
from wakeful.sources.shell.monitor import Pattern, Patterns, RateLimiter
from wakeful.sources.shell.records import RecordStore, TaskRecord, boot_id, start_ticks
from wakeful.sources.shell.runner import supervise
from wakeful.sources.shell.task import ShellTask, Stop
from wakeful.tools.child_env import child_environment
from wakeful.tools.process import stop_group

log = structlog.get_logger(__name__)

Submit = Callable[[Event], Awaitable[object]]
KILL_SLACK_S = 2.0  # beyond the grace period, for SIGKILL and the last bookkeeping
RECORD_LINES = 20  # last output lines kept in a finished task's record


@dataclass(frozen=True)
class ShellOptions:
    grace_s: float = 2.0
    events_per_window: int = 5
    window_s: float = 10.0
    memory_lines: int = 200
    keep_finished: int = 50  # finished tasks task_status still knows about
    retain_s: float = 7 * 86400  # records and output files of reported tasks, after they end


class ShellTaskManager:
    def __init__(
        self,
        records: RecordStore,
        submit: Submit,
        group: TaskGroup | None,
        options: ShellOptions,
        sandbox: Sandbox = NO_SANDBOX,
    ) -> None:
        self.records = records
        self.sandbox = sandbox
        self.options = options
        self._submit = submit
        self._group = group  # None until the component's run phase attaches its group
        self._tasks: dict[str, ShellTask] = {}

    def attach(self, group: TaskGroup) -> None:
        """The task group that owns every command from now on (the component's)."""
        self._group = group

    # -- queries ------------------------------------------------------------------

    def get(self, session: str, task_id: str) -> ShellTask | None:
        task = self._tasks.get(task_id)
        return task if task is not None and task.session == session else None

    def tasks_of(self, session: str) -> list[ShellTask]:
        return [t for t in self._tasks.values() if t.session == session]

    def running_count(self) -> int:
        return sum(t.running for t in self._tasks.values())

    # -- start ----------------------------------------------------------------------

    async def start(
        self,
        session: str,
        command: str,
        cwd: Path,
        patterns: list[Pattern],
        *,
        home: Path | None = None,
        tainted_by: str | None = None,
        limit_s: float | None = None,
        kill_on_timeout: bool = False,
    ) -> ShellTask:
        """Spawn ``command`` in a new process group; a task of ours watches it.
        ``home``: its HOME (the workspace; ``cwd`` when not given). ``tainted_by``:
        the taint of the run that started it, carried into its events. ``limit_s``:
        its declared limit (see ``limits.py``)."""
        task_id = f"shell-{uuid.uuid4().hex[:8]}"
        task = self._new_task(session, task_id, command, cwd)
        task.record.tainted_by = tainted_by
        task.record.limit_s = limit_s
        task.record.kill_on_timeout = kill_on_timeout
        task.patterns.add(patterns)
        proc = await anyio.open_process(
            self.sandbox.argv(command, cwd=cwd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=child_environment(home or cwd),  # never the daemon's secrets
            start_new_session=True,  # pid == process group id; apart from ours
        )
        task.started_mono = time.monotonic()
        try:
            task.record.pgid = proc.pid
            task.record.boot_id = boot_id()
            task.record.leader_start_ticks = start_ticks(proc.pid)
            await self.records.save(task.record)
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self._stop_budget()):
                await stop_group(proc.pid, self.options.grace_s)
                await proc.aclose()
            raise
        self._tasks[task_id] = task
        self._forget_old()
        if self._group is None:  # tools exist only once components run; a bug if reached
            raise RuntimeError("shell tasks started before the shell component runs")
        self._group.start_soon(self._run, task, proc, name=f"shell task {task_id}")
        if limit_s is not None:
            self._group.start_soon(watch_limit, task, self, name=f"limit of {task_id}")
        log.info("shell task started", task_id=task_id, session=session, pgid=proc.pid)
        return task

    def _new_task(self, session: str, task_id: str, command: str, cwd: Path) -> ShellTask:
        options = self.options
        record = TaskRecord(
            task_id=task_id,
            session=session,
            command=command,
            cwd=str(cwd),
            started_at=time.time(),
            output_file=str(self.records.log_path(task_id)),
        )
        return ShellTask(
            record=record,
            tail=OutputTail(memory_lines=options.memory_lines),
            patterns=Patterns(),
            limiter=RateLimiter(options.events_per_window, options.window_s),
        )

    # -- running and ending -----------------------------------------------------------

    async def _run(self, task: ShellTask, proc: Process) -> None:
        try:
            await supervise(task, proc, self, self.options.grace_s)
        except Exception as exc:  # e.g. the output file cannot be written: say so, stop it
            log.exception("shell task failed inside wakeful", task_id=task.task_id)
            task.stop, task.stop_detail = Stop.ERROR, f"{type(exc).__name__}: {exc}"
        except BaseException:  # the daemon is stopping
            task.stop = task.stop or Stop.SHUTDOWN
            with anyio.CancelScope(shield=True), anyio.move_on_after(self._stop_budget()):
                await stop_group(proc.pid, self.options.grace_s)
                await self._finish(task, proc)
            raise
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(KILL_SLACK_S):
                await proc.aclose()
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._stop_budget()):
            if task.stop is Stop.ERROR:
                await stop_group(proc.pid, self.options.grace_s)
            await self._finish(task, proc)

    async def _finish(self, task: ShellTask, proc: Process) -> None:
        record = task.record
        if not task.running:
            return
        task.finished_mono = time.monotonic()
        with anyio.move_on_after(KILL_SLACK_S):  # a killed leader may need a moment
            await proc.wait()
        record.exit_code = proc.returncode
        record.finished_at = time.time()
        record.duration_s = round(task.finished_mono - task.started_mono, 3)
        record.last_lines = task.tail.last(RECORD_LINES)
        record.progress = task.tail.progress
        record.reason = _reason(task) or self._limit_hit(task, proc.returncode)
        if task.stop in (Stop.CANCEL, Stop.SHUTDOWN):  # TIMEOUT: "failed", reported
            record.state = "cancelled"
        else:
            record.state = "done" if record.exit_code == 0 and task.stop is None else "failed"
        # cancel_task answers the model itself; at shutdown no event can be committed.
        record.reported = task.stop is Stop.CANCEL
        await self.records.save(record)
        task.done.set()
        log.info("shell task ended", task_id=task.task_id, state=record.state, exit=proc.returncode)
        if not record.reported and task.stop is not Stop.SHUTDOWN:
            output = task.tail.shaped(task.output_file)
            await self.report(
                record, events.exited_event(record, output, task.limiter.suppressed_total)
            )

    async def report(self, record: TaskRecord, event: Event) -> None:
        """Commit the task's end as an event, then remember that it was reported."""
        try:
            await self._submit(event)
        except Exception as exc:  # stopping or store down: the next start reports it
            log.warning("shell task end not reported yet", task_id=record.task_id, error=str(exc))
            return
        record.reported = True
        await self.records.save(record)

    # -- LineSink (called by the runner) ----------------------------------------------------

    async def output_line(self, task: ShellTask, line: str) -> None:
        task.tail.add(line)
        pattern = task.patterns.first_match(line)
        if pattern is None:
            return
        line_no = task.tail.lines
        if not task.limiter.allow():
            task.limiter.refuse(cut(line), line_no)
            task.suppressed.set()
            return
        held = task.limiter.take_pending()
        event = events.output_event(
            task.record, line_no, cut(line), pattern.describe(), held, subscription=pattern.tag
        )
        await self.report_quietly(event)

    async def summarise_suppressed(self, task: ShellTask) -> None:
        held = task.limiter.take_pending()
        if held:
            limiter = task.limiter
            event = events.suppressed_event(
                task.record, held, limiter.last_suppressed_no, limiter.last_suppressed_line
            )
            await self.report_quietly(event)

    async def report_quietly(self, event: Event) -> None:
        """Submit an event about a running task; a failure is logged, not raised."""
        try:
            await self._submit(event)
        except Exception as exc:
            log.warning("shell output event not delivered", event_id=event.id, error=str(exc))

    # -- cancel -----------------------------------------------------------------------------

    async def cancel(self, session: str, task_id: str) -> dict[str, Any] | None:
        task = self.get(session, task_id)
        if task is None:
            return None
        if not task.running:
            return {**task.describe(), "note": f"it had already ended ({task.record.state})"}
        was = {"command": task.record.command, "runtime_s": round(task.runtime_s(), 1)}
        was |= {"progress": task.progress(), "last_lines": task.last_lines()}
        task.stop = Stop.CANCEL
        if task.record.pgid is not None:  # always set once started; never signal group 0
            await stop_group(task.record.pgid, self.options.grace_s)
        with anyio.move_on_after(self._stop_budget()):
            await task.done.wait()
        return {
            **task.describe(),
            "stopped": "its whole process group was sent SIGTERM, then SIGKILL after "
            f"{self.options.grace_s:g} s if still running",
            "was_running": was,
        }

    # -- helpers ------------------------------------------------------------------------------

    def adopt(self, task: ShellTask) -> None:
        """Show a task known only from its record (e.g. lost in a restart) in task_status."""
        self._tasks.setdefault(task.task_id, task)
        self._forget_old()

    def new_view_task(self, record: TaskRecord) -> ShellTask:
        task = self._new_task(record.session, record.task_id, record.command, Path(record.cwd))
        task.record = record
        return task

    def _limit_hit(self, task: ShellTask, exit_code: int | None) -> str:
        """Which sandbox limit stopped the command, if its status and output tell."""
        return self.sandbox.diagnose(exit_code, "\n".join(task.tail.last(RECORD_LINES))) or ""

    def _stop_budget(self) -> float:
        return self.options.grace_s + KILL_SLACK_S * 2

    def _forget_old(self) -> None:
        finished = [k for k, t in self._tasks.items() if not t.running]
        for key in finished[: max(0, len(finished) - self.options.keep_finished)]:
            del self._tasks[key]


def _reason(task: ShellTask) -> str:
    if task.stop is None:
        return ""
    return f"{task.stop.value}: {task.stop_detail}" if task.stop_detail else task.stop.value
