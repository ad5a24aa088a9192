"""Tool calls as owned background tasks.

Every tool call runs as a task in the session's task group, not inside the
loop step that asked for it. That is what lets an interrupt leave a call
running (rule 3: placeholder now, real result later as a ``tool.result``
event) or cancel it, without either the call or its result going astray.

A task is *claimed* exactly once: by the loop (its result goes into the
trajectory, rule 2) or, after an interrupt, by the late-result path (its
result becomes an event). Claiming is synchronous, so no await can slip
between "is it done?" and "who reports it?".
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import anyio
import structlog
from anyio.abc import TaskGroup

from wakeful.core.provider import ToolCall
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.core.trajectory.placeholders import task_id_for_call
from wakeful.kernel import metrics

log = structlog.get_logger(__name__)


class ToolExecutor(Protocol):
    async def execute(self, name: str, raw_arguments: str, ctx: ToolContext) -> ToolOutput: ...


class TaskState(StrEnum):
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"


class Claim(StrEnum):
    NONE = "none"
    LOOP = "loop"  # the result goes into the trajectory as the call's tool message
    LATE = "late"  # a placeholder promised it: the result becomes a tool.result event


@dataclass
class ToolTask:
    call: ToolCall
    session: str
    started_at: float = field(default_factory=time.monotonic)
    state: TaskState = TaskState.RUNNING
    output: ToolOutput | None = None
    claim: Claim = Claim.NONE
    finished_at: float | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)

    @property
    def task_id(self) -> str:
        return task_id_for_call(self.call.id)

    # -- as a CallInFlight (trajectory rules 2 and 3) --------------------------------

    @property
    def call_id(self) -> str:
        return self.call.id

    @property
    def tool_name(self) -> str:
        return self.call.name

    def result_if_finished(self) -> str | None:
        return self.output.text if self.done.is_set() and self.output is not None else None

    def take(self, *, late: bool) -> bool:
        if self.claim is not Claim.NONE:
            return False
        self.claim = Claim.LATE if late else Claim.LOOP
        return True

    def elapsed_s(self) -> float:
        return (self.finished_at or time.monotonic()) - self.started_at

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task_id": self.task_id,
            "tool": self.call.name,
            "call_id": self.call.id,
            "arguments": self.call.arguments,
            "state": self.state.value,
            "runtime_s": round(self.elapsed_s(), 1),
        }
        if self.output is not None:
            info["result_preview"] = self.output.text[-2000:]
        return info


LateResultSink = Callable[[ToolTask], Awaitable[None]]
ContextFactory = Callable[[ToolCall], ToolContext]


class ToolTaskManager:
    """Starts, tracks and cancels one session's tool calls (implements TaskView)."""

    def __init__(
        self,
        session: str,
        executor: ToolExecutor,
        make_context: ContextFactory,
        late_results: LateResultSink,
        *,
        keep_finished: int = 50,
    ) -> None:
        self.session = session
        self._executor = executor
        self._make_context = make_context
        self._late_results = late_results
        self._keep_finished = keep_finished
        self._tasks: dict[str, ToolTask] = {}
        self._group: TaskGroup | None = None

    def attach(self, group: TaskGroup) -> None:
        """The task group that owns every tool task (the session's)."""
        self._group = group

    def start(self, call: ToolCall) -> ToolTask:
        if self._group is None:
            raise RuntimeError("ToolTaskManager.start() before attach(): no task group owns it")
        task = ToolTask(call=call, session=self.session)
        self._tasks[task.task_id] = task
        self._forget_old()
        self._group.start_soon(self._run, task, name=f"tool {call.name} {call.id}")
        return task

    async def _run(self, task: ToolTask) -> None:
        try:
            with task.scope:
                task.output = await self._executor.execute(
                    task.call.name, task.call.arguments, self._make_context(task.call)
                )
                task.state = TaskState.DONE
        except anyio.get_cancelled_exc_class():
            # Cancelled from outside: the daemon is stopping. A result promised by
            # a placeholder must still arrive, so report it before going away.
            self._finish(task, TaskState.CANCELLED, "the daemon stopped while it ran")
            with anyio.CancelScope(shield=True):
                await self._report_if_promised(task)
            raise
        if task.scope.cancelled_caught:
            self._finish(task, TaskState.CANCELLED, "it was cancelled")
        else:
            self._finish(task, task.state, None)
        with anyio.CancelScope(shield=True):
            await self._report_if_promised(task)

    def _finish(self, task: ToolTask, state: TaskState, why_cancelled: str | None) -> None:
        task.state = state
        if why_cancelled is not None:
            task.output = ToolOutput(
                f"{task.call.name} was stopped after {task.elapsed_s():.1f} s because "
                f"{why_cancelled}; it may have partially executed — verify its effects "
                "before retrying.",
                is_error=True,
            )
        task.finished_at = time.monotonic()
        task.done.set()
        failed = task.output is not None and task.output.is_error
        outcome = task.state.value if task.state is TaskState.CANCELLED or not failed else "error"
        metrics.TOOL_CALLS.inc(tool=task.call.name, outcome=outcome)

    async def _report_if_promised(self, task: ToolTask) -> None:
        if task.claim is Claim.LATE:
            await self._late_results(task)

    # -- TaskView (task_status / cancel_task) ----------------------------------

    def describe(self, task_id: str) -> dict[str, Any] | None:
        task = self._tasks.get(task_id)
        return task.describe() if task else None

    def list_tasks(self) -> list[dict[str, Any]]:
        return [task.describe() for task in self._tasks.values()]

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        task = self._tasks.get(task_id)
        if task is None:
            return None
        if task.state is TaskState.RUNNING:
            task.scope.cancel()
            with anyio.move_on_after(10):
                await task.done.wait()
        return task.describe()

    def _forget_old(self) -> None:
        finished = [k for k, t in self._tasks.items() if t.state is not TaskState.RUNNING]
        for key in finished[: max(0, len(finished) - self._keep_finished)]:
            del self._tasks[key]
