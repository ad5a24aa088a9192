"""task_status and cancel_task: look at and stop the session's background tasks."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from wakeful.core.effects import Effect
from wakeful.core.tool import TaskView, ToolArgs, ToolContext, ToolOutput


class TaskStatus:
    name = "task_status"
    group = "tasks"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Report the status and progress of a background task started earlier by a "
        "start_*/initiate_* tool (they return a task id at once). Omit task_id to list "
        "all tasks of this session. It only reads; it does not wait for the task to "
        "finish - completion arrives as a separate event. "
        'Example: {"task_id": "T3"}'
    )

    class Args(ToolArgs):
        task_id: str | None = Field(default=None, description="omit to list all tasks")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 10.0

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        if a.task_id is None:
            tasks = ctx.tasks.list_tasks()
            if not tasks:
                return ToolOutput("no background tasks in this session", data={"tasks": []})
            return ToolOutput(_dump(tasks), data={"tasks": tasks})
        task = ctx.tasks.describe(a.task_id)
        if task is None:
            return _unknown(a.task_id, ctx.tasks)
        return ToolOutput(_dump(task), data={"task": task})


class CancelTask:
    name = "cancel_task"
    group = "tasks"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Ask a running background task to stop (its processes are terminated). Returns "
        "the task's state at once; the final result, if any, arrives later as an event. "
        "A cancelled task may have partially executed - check its effects before "
        "starting it again. Use task_status first if unsure which task is which. "
        'Example: {"task_id": "T3"}'
    )

    class Args(ToolArgs):
        task_id: str = Field(min_length=1, description="the id returned when it started")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 30.0

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        task = await ctx.tasks.cancel(a.task_id)
        if task is None:
            return _unknown(a.task_id, ctx.tasks)
        return ToolOutput(f"cancel requested for {a.task_id}:\n{_dump(task)}", data={"task": task})


def _unknown(task_id: str, tasks: TaskView) -> ToolOutput:
    known = [str(t.get("task_id", t.get("id", "?"))) for t in tasks.list_tasks()]
    listing = ", ".join(known) if known else "(none - no background tasks exist)"
    return ToolOutput(
        f"unknown task id {task_id!r}; the known task ids are: {listing}", is_error=True
    )


def _dump(value: Any) -> str:
    # Sorted keys: the same state always reads the same way.
    return json.dumps(value, sort_keys=True, indent=2, default=str, ensure_ascii=False)
