"""Real results of interrupted tool calls, delivered as ``tool.result`` events.

A placeholder that promises a later result (SPEC §4 rule 3) is a debt. It is
paid when the call finishes (:func:`late_result_event`), or — if the daemon
was killed before that — on the next start, with an honest "lost" notice
(:func:`unpaid_promises`). Both use the same event id, so the store's dedup
makes sure the session sees exactly one of them.
"""

from __future__ import annotations

from typing import Any

from wakeful.core.trajectory.normalizer import open_calls
from wakeful.core.trajectory.placeholders import promises_late_result, task_id_for_call
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event

Message = dict[str, Any]


def late_result_event(session: str, call_id: str, tool: str, text: str) -> Event:
    return Event.parse(
        {
            "id": f"tool:{session}:{call_id}",
            "kind": EventKind.TOOL_RESULT,
            "source": {"type": "system", "principal": "wakeful", "trusted": True},
            "channel": f"tool:{tool}",
            "content": {"text": text},
            "context": {
                "related_call_id": call_id,
                "related_task_id": task_id_for_call(call_id),
                "tool_name": tool,
            },
            "session": session,
        }
    )


def lost_result_text(tool: str) -> str:
    return (
        f"lost: the daemon was killed before {tool} finished, so its outcome is unknown. "
        "It may have partially executed — verify its effects before retrying."
    )


def unpaid_promises(messages: list[Message]) -> list[tuple[str, str]]:
    """(call id, tool) of every placeholder that promised a later result."""
    names: dict[str, str] = {}
    promised: list[tuple[str, str]] = []
    for message in messages:
        names.update(open_calls(message))
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str):
            call_id = str(message.get("tool_call_id"))
            if promises_late_result(content):
                promised.append((call_id, names.get(call_id, "a tool")))
    return promised
