"""The events an approval's outcome re-enters its session as (SPEC rule 3's machinery):
``approval.decided`` for the record, ``tool.result`` paying the call's placeholder."""

from __future__ import annotations

from wakeful.core.approvals.record import Approval
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event


def _why(approval: Approval) -> str:
    return f": {approval.decided_reason}" if approval.decided_reason else ""


def answered_text(approval: Approval) -> str:
    if approval.kind == "input":
        return f"the owner answered: {approval.decided_reason or '(an empty answer)'}"
    return f"the owner approved{_why(approval)}. Go ahead."


def denied_text(approval: Approval) -> str:
    if approval.kind == "input":
        default = f" The default applies: {approval.default}" if approval.default else ""
        return f"the owner declined to answer{_why(approval)}.{default}"
    if approval.kind == "question":
        return f"the owner said no{_why(approval)}. Do not do it."
    return (
        f"denied by the owner{_why(approval)}. {approval.tool} was not run. Do not retry it; "
        "ask the user if something else should be done."
    )


def timed_out_text(approval: Approval) -> str:
    after = f"after {approval.timeout_s:g} s"
    if approval.kind == "input":
        default = approval.default or "(none: do not assume an answer)"
        return f"no answer {after}. The default applies: {default}"
    if approval.kind == "question":
        return f"no answer {after}: treat it as no. Do not do it; ask again later if needed."
    return (
        f"approval timed out {after}: denied. {approval.tool} was not run. Ask the user "
        "again if it is still needed."
    )


def decided_event(approval: Approval) -> Event:
    by = approval.decided_by or "owner"
    verb = {"approve": "approved", "deny": "denied", "timeout": "let time out"}.get(
        approval.decision or "", "decided"
    )
    who = (
        "Nobody decided in time: it was denied"
        if approval.decision == "timeout"
        else (f"The owner {verb} it")
    )
    why = f" ({approval.decided_reason})" if approval.decided_reason else ""
    return Event.parse(
        {
            "id": f"approval:{approval.id}",
            "kind": EventKind.APPROVAL_DECIDED,
            "source": {
                "type": "user" if by != "timeout" else "system",
                "principal": by,
                "trusted": True,
            },
            "channel": "approvals",
            "content": {
                "text": f"Approval {approval.id} for {approval.tool} (call {approval.call_id}): "
                f"{who}{why}.",
                "data": {
                    "approval_id": approval.id,
                    "decision": approval.decision,
                    "tool": approval.tool,
                    "call_id": approval.call_id,
                },
            },
            "context": {"related_call_id": approval.call_id, "tool_name": approval.tool},
            "session": approval.session,
        }
    )


def outcome_event(approval: Approval) -> Event:
    """The ``tool.result`` that pays the call's placeholder (the late-result id)."""
    return Event.parse(
        {
            "id": f"tool:{approval.session}:{approval.call_id}",
            "kind": EventKind.TOOL_RESULT,
            "source": {"type": "system", "principal": "wakeful", "trusted": True},
            "channel": f"tool:{approval.tool}",
            "content": {
                "text": approval.outcome or "",
                "data": {"approval_id": approval.id, "decision": approval.decision},
            },
            "context": {"related_call_id": approval.call_id, "tool_name": approval.tool},
            "session": approval.session,
        }
    )
