"""What one outgoing mail is, as the email state keeps it (either backend)."""

from __future__ import annotations

from dataclasses import dataclass

from wakeful.core.outbox.states import DeliveryState


@dataclass(frozen=True)
class OutboxRow:
    message_id: str
    draft_id: str
    account: str
    state: DeliveryState
    recipients: list[str]
    raw: bytes
    detail: str
