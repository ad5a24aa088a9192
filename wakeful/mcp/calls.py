"""MCP calls in flight, with the progress their servers report, as task views.

A server's ``notifications/progress`` for a call update its entry here; the
session's ``task_status`` and status bar read it through :class:`SessionMcpCalls`.
Each entry is ``part_of`` the loop's own ``task-<call id>`` entry (which owns the
call), so the combined view shows the call once, with this progress; asked for
by its own id ``mcp-<call id>``, it still answers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from wakeful.core.trajectory.placeholders import task_id_for_call

# Finished calls stay visible for a while, so task_status can still say how one ended.
KEEP_FINISHED = 20


@dataclass
class McpCall:
    task_id: str
    session: str
    tool: str
    call_id: str
    started: float
    state: str = "running"
    progress: str | None = None
    finished: float | None = None

    def describe(self) -> dict[str, Any]:
        end = self.finished if self.finished is not None else time.monotonic()
        info: dict[str, Any] = {
            "task_id": self.task_id,
            "part_of": task_id_for_call(self.call_id),
            "kind": "mcp_call",
            "tool": self.tool,
            "call_id": self.call_id,
            "state": self.state,
            "runtime_s": round(end - self.started, 1),
        }
        if self.progress is not None:
            info["progress"] = self.progress
        return info


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """``2/3 (67 %): indexing`` — what a person reads in task_status."""
    text = f"{progress:g}"
    if total:
        text += f"/{total:g} ({100 * progress / total:.0f} %)"
    return f"{text}: {message}" if message else text


class McpCalls:
    """Every session's MCP calls, newest last."""

    def __init__(self) -> None:
        self._calls: dict[str, McpCall] = {}

    @contextmanager
    def track(self, *, session: str, tool: str, call_id: str) -> Iterator[McpCall]:
        call = McpCall(f"mcp-{call_id}", session, tool, call_id, time.monotonic())
        self._calls[call.task_id] = call
        try:
            yield call
        except BaseException:
            call.state = "stopped"
            raise
        else:
            call.state = "done"
        finally:
            call.finished = time.monotonic()
            self._forget_old()

    def running(self) -> int:
        return sum(1 for call in self._calls.values() if call.state == "running")

    def of(self, session: str) -> list[McpCall]:
        return [call for call in self._calls.values() if call.session == session]

    def _forget_old(self) -> None:
        finished = [key for key, call in self._calls.items() if call.state != "running"]
        for key in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            del self._calls[key]


class SessionMcpCalls:
    """One session's MCP calls (a TaskView). Cancelling goes through the loop's own
    ``task-<call id>`` entry, which owns the call's task."""

    def __init__(self, calls: McpCalls, session: str) -> None:
        self._calls = calls
        self._session = session

    def describe(self, task_id: str) -> dict[str, Any] | None:
        found = next((c for c in self._calls.of(self._session) if c.task_id == task_id), None)
        return found.describe() if found else None

    def list_tasks(self) -> list[dict[str, Any]]:
        return [call.describe() for call in self._calls.of(self._session)]

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        found = self.describe(task_id)
        if found is None:
            return None
        return {**found, "note": f"cancel task-{found['call_id']}: it owns this call"}
