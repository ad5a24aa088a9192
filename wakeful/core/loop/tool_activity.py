"""Tool activity for watchers: ``tool`` feed items, started / progress / finished."""

from __future__ import annotations

from typing import Any, Literal

from wakeful.core.loop.tool_tasks import ToolTask

# How often a running tool call reports that it is still running.
PROGRESS_EVERY_S = 5.0
PREVIEW_CHARS = 200

ToolPhase = Literal["started", "progress", "finished"]


def tool_item(task: ToolTask, phase: ToolPhase) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "tool",
        "state": phase,
        "name": task.call.name,
        "call_id": task.call.id,
        "elapsed_s": round(task.elapsed_s(), 3),
    }
    if phase == "started":
        item["preview"] = task.call.arguments[:PREVIEW_CHARS]
    elif phase == "finished":
        item["outcome"] = task.state.value
        if task.output is not None:
            item["is_error"] = task.output.is_error
            item["preview"] = task.output.text[:PREVIEW_CHARS]
    return item
