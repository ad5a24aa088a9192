"""One session's subagents as ``task_status``, ``cancel_task``, the status bar and
``wakeful status`` see them: background tasks with the subagent id as task id."""

from __future__ import annotations

import time
from typing import Any

from wakeful.subagents.manager import SubagentManager
from wakeful.subagents.records import State, SubagentRecord


def describe(record: SubagentRecord) -> dict[str, Any]:
    info: dict[str, Any] = {
        "task_id": record.subagent_id,
        "kind": "subagent",
        "session": record.session,
        "task": record.task[:200],
        "state": record.state.value,
        "runtime_s": round(max(0.0, time.time() - record.created_at), 1),
        "depth": record.depth,
        "tools": record.tools,
        "budget": {
            "model_calls": record.budget.model_calls,
            "tokens": record.budget.tokens,
            "seconds": record.budget.seconds,
        },
        "results_delivered": record.results,
    }
    if record.last_result:
        info["last_result"] = record.last_result
    if record.reason:
        info["reason"] = record.reason
    return info


class SessionSubagents:
    """Implements :class:`wakeful.core.tool.TaskView` for one parent session."""

    def __init__(self, manager: SubagentManager, session: str) -> None:
        self._manager = manager
        self._session = session

    def describe(self, task_id: str) -> dict[str, Any] | None:
        record = self._manager.book.get(task_id)
        return describe(record) if record and record.parent == self._session else None

    def list_tasks(self) -> list[dict[str, Any]]:
        return [describe(r) for r in self._manager.book.children_of(self._session)]

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        record = self._manager.book.get(task_id)
        if record is None or record.parent != self._session:
            return None
        if record.state is State.CANCELLED:
            return {**describe(record), "note": "it had already been cancelled"}
        await self._manager.cancel(record, f"cancelled by its parent {self._session}")
        return describe(record)
