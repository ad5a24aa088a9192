"""`wakeful status` made short: each session's running tasks and its few latest finished
ones, one line each; the rest is a count (``--json`` shows everything)."""

from __future__ import annotations

from typing import Any

RECENT_FINISHED = 3
PREVIEW_CHARS = 60


def compact_status(status: dict[str, Any]) -> dict[str, Any]:
    """The status with each session's task list cut down to lines."""
    sessions = status.get("sessions")
    if not isinstance(sessions, dict):
        return status
    compact = {
        name: _compact_session(info) if isinstance(info, dict) else info
        for name, info in sessions.items()
    }
    return {**status, "sessions": compact}


def _compact_session(info: dict[str, Any]) -> dict[str, Any]:
    tasks = [t for t in info.get("tasks") or [] if isinstance(t, dict)]
    running = [t for t in tasks if t.get("state") == "running"]
    finished = [t for t in tasks if t.get("state") != "running"]
    lines = [task_line(t) for t in running + finished[-RECENT_FINISHED:]]
    older = len(finished) - RECENT_FINISHED
    if older > 0:
        lines.append(f"(+{older} older finished task{'s' if older != 1 else ''})")
    return {**info, "tasks": lines}


def task_line(task: dict[str, Any]) -> str:
    """``id  tool  state  runtime  first line of the result (or the arguments)``."""
    name = task.get("tool") or task.get("kind") or "task"
    runtime = task.get("runtime_s")
    fields = [str(task.get("task_id", "?")), str(name), str(task.get("state", "?"))]
    if isinstance(runtime, int | float):
        fields.append(f"{runtime:g}s")
    detail = task.get("result_preview") or task.get("arguments") or ""
    text = " ".join(str(detail).split())
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    return "  ".join(fields) + (f"  {text}" if text else "")
