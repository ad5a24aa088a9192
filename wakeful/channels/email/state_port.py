"""What the email channel keeps between restarts, whichever backend keeps it.

Per mailbox the cursor and the Message-IDs delivered (for a UIDVALIDITY
resync), and the outbox's drafts. ``MailDb`` keeps them in the daemon's
SQLite file; ``RedisMailState`` under ``[store] redis_prefix``, where every
daemon of a fleet sees the same cursors and drafts.
"""

from __future__ import annotations

from typing import Protocol

from wakeful.channels.email.db import Cursor
from wakeful.channels.email.draft_record import OutboxRow
from wakeful.core.outbox.states import DeliveryState


class MailState(Protocol):
    async def cursor(self, account: str, mailbox: str) -> Cursor | None: ...

    async def set_cursor(self, account: str, mailbox: str, cursor: Cursor) -> None: ...

    async def advance(
        self, account: str, mailbox: str, cursor: Cursor, message_id: str, event_id: str
    ) -> None:
        """Record one delivered (or deliberately skipped) message, atomically."""
        ...

    async def seen(self, account: str, mailbox: str, message_id: str) -> str | None:
        """The event id a message with this Message-ID was delivered as, if any."""
        ...

    async def add_draft(self, row: OutboxRow, now: float) -> None: ...

    async def draft(self, draft_or_message_id: str) -> OutboxRow | None: ...

    async def move_draft(
        self, message_id: str, olds: tuple[str, ...], new: DeliveryState, detail: str
    ) -> bool:
        """Compare-and-set a draft's state: False when it was in none of ``olds``."""
        ...

    async def drafts_in(self, state: DeliveryState) -> list[OutboxRow]: ...

    async def sending_elsewhere(self, row: OutboxRow) -> bool:
        """Whether another daemon of the fleet, still running, is sending this draft now:
        then it must not be reconciled (it would be marked unknown under that daemon)."""
        ...

    async def aclose(self) -> None: ...
