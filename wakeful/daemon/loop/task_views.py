"""One view over every kind of background task a session can ask about.

``task_status`` / ``cancel_task`` and the status bar see the session's tool
calls and whatever components add (background shell tasks, subagents), with
one id space: each view answers only for its own ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wakeful.handlers.base import TaskView

# Given a session name, the component's view of that session's tasks.
SessionTaskViews = Callable[[str], TaskView]


class CombinedTaskView:
    def __init__(self, views: Sequence[TaskView]) -> None:
        self._views = list(views)

    def describe(self, task_id: str) -> dict[str, Any] | None:
        for view in self._views:
            found = view.describe(task_id)
            if found is not None:
                return found
        return None

    def list_tasks(self) -> list[dict[str, Any]]:
        return [task for view in self._views for task in view.list_tasks()]

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        for view in self._views:
            if view.describe(task_id) is not None:
                return await view.cancel(task_id)
        return None

    def running(self) -> list[dict[str, Any]]:
        return [t for t in self.list_tasks() if t.get("state") == "running"]
