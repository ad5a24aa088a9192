"""Approvals: a call that needs the owner's yes waits as a durable record, not a blocked loop.

``record`` — the stored record and its states; ``service`` — :class:`Approvals`, which
files, decides, times out and carries them out; ``outcome_events`` — the events an
outcome re-enters its session as. The names below are the package's interface.
"""

from wakeful.core.approvals.outcome_events import decided_event, outcome_event
from wakeful.core.approvals.record import (
    DECIDED,
    Approval,
    ApprovalState,
    DecideOutcome,
    already_decided,
    approval_id,
    notice_key,
)
from wakeful.core.approvals.service import ApprovalEffects, Approvals

__all__ = [
    "DECIDED",
    "Approval",
    "ApprovalEffects",
    "ApprovalState",
    "Approvals",
    "DecideOutcome",
    "already_decided",
    "approval_id",
    "decided_event",
    "notice_key",
    "outcome_event",
]
