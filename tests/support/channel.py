"""The channel the core's replies go to: records each message it is handed."""

from __future__ import annotations

from tests.support.changes import Changes
from wakeful.core.outbox.channels import Receipt
from wakeful.core.outbox.targets import LOCAL_CHAT
from wakeful.store.outbox.record import OutgoingMessage


class RecordingChannel:
    """Stands in for the local chat (every reply of a test event goes there), or for
    a chat platform's channel (``name``: e.g. ``chat:room``; its replies carry the
    conversation in ``address``)."""

    resend_safe = False

    def __init__(self, changes: Changes, name: str = LOCAL_CHAT) -> None:
        self.name = name
        self._changes = changes
        self.delivered: list[OutgoingMessage] = []

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        self.delivered.append(message)
        self._changes.ping()
        return Receipt(self.name, f"delivered to {self.name} (the test's channel)")

    def texts(self, session: str | None = None) -> list[str]:
        return [m.text for m in self.delivered if session is None or m.session == session]
