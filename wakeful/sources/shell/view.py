"""One session's shell tasks as ``task_status``, ``cancel_task`` and the status bar see them."""

from __future__ import annotations

from typing import Any

from wakeful.sources.shell.manager import ShellTaskManager


class SessionShellTasks:
    """Implements :class:`wakeful.core.tool.TaskView` for one session."""

    def __init__(self, manager: ShellTaskManager, session: str) -> None:
        self._manager = manager
        self._session = session

    def describe(self, task_id: str) -> dict[str, Any] | None:
        task = self._manager.get(self._session, task_id)
        return task.describe() if task is not None else None

    def list_tasks(self) -> list[dict[str, Any]]:
        return [task.describe() for task in self._manager.tasks_of(self._session)]

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        return await self._manager.cancel(self._session, task_id)
