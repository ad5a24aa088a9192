"""What the email channel keeps between restarts, whichever backend keeps it.

Per mailbox the cursor and the Message-IDs delivered (for a UIDVALIDITY
resync), and the drafts of ``draft_email`` (their sending is the shared
outbox's). ``MailDb`` keeps them in the daemon's SQLite file; ``RedisMailState``
under ``[store] redis_prefix``, where every daemon of a fleet sees the same
cursors and drafts.
"""

from __future__ import annotations

from typing import Protocol

from wakeful.channels.email.db import Cursor
from wakeful.channels.email.draft_record import Draft
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

    async def add_draft(self, row: Draft, now: float) -> None: ...

    async def draft(self, draft_or_message_id: str) -> Draft | None: ...

    async def settle_legacy(self, message_id: str, new: DeliveryState, detail: str) -> bool:
        """Settle a draft an older version left ``sending`` (compare-and-set on that
        state): False when it was not ``sending`` any more."""
        ...

    async def aclose(self) -> None: ...
