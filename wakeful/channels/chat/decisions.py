"""The owner's approval decisions made in chat: typed ("approve k3fwz2qp") or a button press.

Both end in :meth:`Approvals.decide` and one line for the owner, worded like
the HTTP API's answers, so the web page, the CLI and every chat platform say
the same thing about the same outcome. Whether the sender may decide at all
is the caller's check (:class:`ChatInbound`): a stranger never gets here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from wakeful.core.approvals import Approval, Approvals, DecideOutcome, already_decided

Decision = Literal["approve", "deny", "answer"]

# The whole message, nothing else: "approve <id>", "deny <id> [reason…]" or
# "answer <id> <text…>" (a request for input). Ids are eight characters of base32
# (a-z, 2-7); phones capitalise the first word, so any case.
_COMMAND = re.compile(
    r"^\s*(?:(approve)\s+([a-z2-7]{8})|(deny)\s+([a-z2-7]{8})(?:\s+(.*?))?"
    r"|(answer)\s+([a-z2-7]{8})\s+(.+?))\s*$",
    re.IGNORECASE | re.DOTALL,
)
MAX_REASON_CHARS = 2000  # as the HTTP API allows


@dataclass(frozen=True)
class DecisionRequest:
    decision: Decision
    approval_id: str
    reason: str = ""


@dataclass(frozen=True)
class DecisionResult:
    outcome: DecideOutcome
    approval: Approval | None
    line: str  # what the owner is told, one line


def parse_decision(text: str) -> DecisionRequest | None:
    """The decision ``text`` is, when the whole of it is one; else None (a message)."""
    match = _COMMAND.match(text)
    if match is None:
        return None
    if match.group(1):
        return DecisionRequest("approve", match.group(2).lower())
    if match.group(6):
        return DecisionRequest("answer", match.group(7).lower(), match.group(8)[:MAX_REASON_CHARS])
    reason = (match.group(5) or "").strip()[:MAX_REASON_CHARS]
    return DecisionRequest("deny", match.group(4).lower(), reason)


async def decide(approvals: Approvals, request: DecisionRequest, *, by: str) -> DecisionResult:
    """Decide and say how it went; the first decision stands."""
    outcome, approval = await approvals.decide(
        request.approval_id, request.decision, reason=request.reason, by=by
    )
    return DecisionResult(outcome, approval, describe(outcome, approval, request.approval_id))


def describe(outcome: DecideOutcome, approval: Approval | None, approval_id: str) -> str:
    if outcome is DecideOutcome.UNKNOWN or approval is None:
        return (
            f"no approval {approval_id!r}: mistyped, or decided long ago; "
            "`wakeful approvals` lists the pending ones"
        )
    if outcome is DecideOutcome.ALREADY:
        return already_decided(approval)
    if outcome is DecideOutcome.WRONG_KIND:
        if approval.kind == "input":
            return f'{approval.id} asks for an answer: reply "answer {approval.id} <text>"'
        return f"{approval.id} is a yes-or-no request: reply approve or deny {approval.id}"
    if approval.decision == "answer":
        return f"answered {approval.id}: the agent gets your answer"
    if approval.decision == "approve" and approval.kind == "question":
        return f"approved {approval.id}: the agent is told yes"
    if approval.decision == "approve":
        return f"approved {approval.id}: {approval.tool} runs once now"
    why = f" ({approval.decided_reason})" if approval.decided_reason else ""
    return f"denied {approval.id}: {approval.tool} will not run{why}"


def standing(approval: Approval) -> str:
    """The decision that stands, as shown under the notice in place of its buttons
    (the same for every press, so a redelivered press changes nothing shown)."""
    if approval.decision == "approve":
        return f"Approved by {approval.decided_by}: {approval.tool} runs once."
    if approval.decision == "timeout":
        return f"Nobody decided in time, so it was denied: {approval.tool} was not run."
    why = f" ({approval.decided_reason})" if approval.decided_reason else ""
    return f"Denied by {approval.decided_by}{why}: {approval.tool} was not run."
