"""One view over every kind of background task a session can ask about.

``task_status`` / ``cancel_task`` and the status bar see the session's tool
calls and whatever components add (background shell tasks, subagents), with
one id space: each view answers only for its own ids.

A view may add to another's entry instead of listing a task of its own: an
entry with ``part_of`` (an MCP call's progress names the loop's
``task-<call id>``, which owns the call and cancels it) is folded into that
entry, so the call is shown once, with its progress. One whose owner is no
longer listed stays an entry of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wakeful.core.tool import TaskView

# Given a session name, the component's view of that session's tasks.
SessionTaskViews = Callable[[str], TaskView]


class CombinedTaskView:
    def __init__(self, views: Sequence[TaskView]) -> None:
        self._views = list(views)

    def describe(self, task_id: str) -> dict[str, Any] | None:
        for view in self._views:
            found = view.describe(task_id)
            if found is not None:
                for extra in self._parts_of(task_id):
                    found = _folded(found, extra)
                return found
        return None

    def list_tasks(self) -> list[dict[str, Any]]:
        tasks = [task for view in self._views for task in view.list_tasks()]
        owners = {t.get("task_id"): n for n, t in enumerate(tasks) if "part_of" not in t}
        shown: list[dict[str, Any] | None] = list(tasks)
        for n, task in enumerate(tasks):
            owner = owners.get(task.get("part_of"))
            if owner is not None:
                shown[owner] = _folded(shown[owner] or {}, task)
                shown[n] = None
        return [task for task in shown if task is not None]

    def _parts_of(self, task_id: str) -> list[dict[str, Any]]:
        return [
            task
            for view in self._views
            for task in view.list_tasks()
            if task.get("part_of") == task_id
        ]

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        for view in self._views:
            if view.describe(task_id) is not None:
                return await view.cancel(task_id)
        return None

    def running(self) -> list[dict[str, Any]]:
        return [t for t in self.list_tasks() if t.get("state") == "running"]


def _folded(owner: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """The owner's entry (its id, state and runtime) with what the part adds."""
    added = {k: v for k, v in part.items() if k not in owner and k not in ("task_id", "part_of")}
    return {**owner, **added}
