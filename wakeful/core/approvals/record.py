"""An approval as stored: its states, its record, and the ids and keys that name it."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

KEY_PREFIX = "approval:"
# Decided records are kept this long for ?all=1 and the audit, then dropped.
KEEP_DECIDED_S = 7 * 24 * 3600
# In a fleet, how soon the owner notices a decision another daemon wrote to the store.
SHARED_POLL_S = 1.0


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"  # decided yes; not started yet
    RUNNING = "running"  # the approved call is executing
    DONE = "done"  # the approved call finished and its result was reported
    DENIED = "denied"
    TIMED_OUT = "timeout"


DECIDED = frozenset({ApprovalState.DONE, ApprovalState.DENIED, ApprovalState.TIMED_OUT})


@dataclass(frozen=True)
class Approval:
    id: str  # short, typeable in chat: "approve k3fwz2qp"
    session: str
    call_id: str
    tool: str
    arguments: str  # as the model sent them (JSON text); shown, never re-interpreted
    reason: str
    tainted_by: str | None
    requested_at: str
    expires_at: str
    state: ApprovalState = ApprovalState.PENDING
    decision: str | None = None  # approve | deny | timeout
    decided_by: str | None = None
    decided_reason: str | None = None
    decided_at: str | None = None
    outcome: str | None = None  # the text the tool.result carried
    reported: bool = False  # the decision's events are in the store
    # "call": a tool call held by the policy; "question": request_human_approval;
    # "input": request_human_input, answered with text (``default`` if nobody does).
    kind: str = "call"
    default: str | None = None
    timeout_s: float = 0.0  # how long it waits before the conservative default
    announced: bool = False  # the owner was told it waits (chat, web page)
    # What the call would do, in full, as its tool resolved it (call_effect.py); ""
    # for questions and for approvals filed before effects were kept.
    effect: str = ""

    def public(self) -> dict[str, Any]:
        """The shape of ``GET /api/approvals`` and the CLI."""
        try:
            arguments: Any = json.loads(self.arguments) if self.arguments.strip() else {}
        except ValueError:
            arguments = self.arguments
        data: dict[str, Any] = {
            "id": self.id,
            "session": self.session,
            "tool": self.tool,
            "call_id": self.call_id,
            "arguments": arguments,
            "reason": self.reason,
            "tainted_by": self.tainted_by,
            "requested_at": self.requested_at,
            "expires_at": self.expires_at,
            "state": "pending" if self.state is ApprovalState.PENDING else "decided",
            "kind": self.kind,
            "effect": self.effect,
        }
        if self.default is not None:
            data["default"] = self.default
        if self.decision is not None:
            data.update(
                decision=self.decision,
                decided_by=self.decided_by,
                decided_reason=self.decided_reason,
                decided_at=self.decided_at,
            )
        return data

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str) -> Approval:
        data = json.loads(raw)
        data["state"] = ApprovalState(data["state"])
        return cls(**data)


NOTICE_KEY_PREFIX = "approval:"


def notice_key(identifier: str) -> str:
    """The outbox key of the owner's notice about an approval (one per approval): it
    makes filing it idempotent. Which approval a message is about is its ``approval``
    field, not this key."""
    return f"{NOTICE_KEY_PREFIX}{identifier}"


def approval_id(session: str, call_id: str) -> str:
    """Stable per call: filing the same call twice (a retried step) is one approval."""
    digest = hashlib.sha256(f"{session}\0{call_id}".encode()).digest()
    return base64.b32encode(digest)[:8].decode().lower()


def already_decided(approval: Approval) -> str:
    """What a second decision is told, on every channel alike."""
    past = {"approve": "approved", "deny": "denied", "timeout": "timed out", "answer": "answered"}
    decision = approval.decision or ""
    return (
        f"approval {approval.id} was already decided ({past.get(decision, decision or 'decided')}"
        f" by {approval.decided_by}); the first decision stands"
    )


class DecideOutcome(StrEnum):
    DECIDED = "decided"
    UNKNOWN = "unknown"  # no such approval
    ALREADY = "already"  # decided before; the first decision stands
    WRONG_KIND = "wrong_kind"  # "answer" for a call, or approve for a request for input
