"""The events between a parent and its subagents, each with an id that makes it happen once.

Ids come from what caused them (the parent's call, the child's trajectory
length when it answered), so a retry after a crash is the same event again
and the store drops it: a child's task and each of its results arrive once.
"""

from __future__ import annotations

from typing import Any

from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event
from wakeful.subagents.records import SubagentRecord

CHILD_NOTE = (
    "[You are a subagent: another session (your parent, {parent}) gave you the task below. "
    "Work on it with your tools, then give your final answer as a reply with no tool "
    "calls: that reply is delivered to your parent as your result (the user does not see "
    "it). report_to_parent sends something to the parent before you finish. Your budget: "
    "{calls} model calls, {tokens} tokens, {seconds:g} s. Your tools: {tools}.]"
)


def task_event(record: SubagentRecord) -> Event:
    budget = record.budget
    note = CHILD_NOTE.format(
        parent=record.parent,
        calls=budget.model_calls,
        tokens=budget.tokens,
        seconds=budget.seconds,
        tools=", ".join(record.tools) or "(none)",
    )
    return _to_child(
        record,
        f"subagent:{record.subagent_id}:task",
        EventKind.SUBAGENT_TASK,
        f"{note}\n\nTask: {record.task}",
        tainted_by=record.tainted_by,  # the parent's taint at spawn: the child starts there
    )


def message_event(
    record: SubagentRecord, text: str, parent_call_id: str, *, tainted_by: str | None
) -> Event:
    """``tainted_by``: the parent's taint as the message is sent, not as it was at the
    spawn (a parent that read a stranger's words since must not pass them on clean)."""
    return _to_child(
        record,
        f"subagent:{record.subagent_id}:message:{parent_call_id}",
        EventKind.SUBAGENT_MESSAGE,
        f"Your parent ({record.parent}) adds: {text}",
        tainted_by=tainted_by,
    )


def _to_child(
    record: SubagentRecord, event_id: str, kind: str, text: str, *, tainted_by: str | None
) -> Event:
    data: dict[str, Any] = {"subagent_id": record.subagent_id, "parent": record.parent}
    if tainted_by:  # the child's session is tainted by it when the event enters it
        data["tainted_by"] = tainted_by
    return Event.parse(
        {
            "id": event_id,
            "kind": kind,
            "source": {"type": "agent", "principal": record.parent, "trusted": True},
            "channel": "subagent",
            "session": record.session,
            "content": {"text": text, "data": data},
            "context": {"related_task_id": record.subagent_id},
        }
    )


def result_event(
    record: SubagentRecord,
    *,
    key: str,
    text: str,
    final: bool,
    urgent: bool = False,
    tainted_by: str | None = None,
) -> Event:
    """To the parent. ``key``: what makes this result unique for the child (its
    trajectory's length when it answered, or its report call's id)."""
    data: dict[str, Any] = {
        "subagent_id": record.subagent_id,
        "state": record.state.value,
        "final": final,
    }
    if tainted_by:  # the child read untrusted input: its words may be that sender's wish
        data["tainted_by"] = tainted_by
    return Event.parse(
        {
            "id": f"subagent:{record.subagent_id}:result:{key}",
            "kind": EventKind.SUBAGENT_RESULT,
            "source": {
                "type": "agent",
                "principal": f"subagent {record.subagent_id}",
                "trusted": True,
            },
            "channel": f"subagent:{record.subagent_id}",
            "session": record.parent,
            "content": {"text": text, "data": data},
            "context": {
                "related_task_id": record.subagent_id,
                "priority": "urgent" if urgent else "normal",
            },
        }
    )
