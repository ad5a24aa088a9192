"""Where a mailbox watcher is: its cursor, and the store it keeps it in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Cursor:
    uidvalidity: int
    last_uid: int
    # After a UIDVALIDITY change, messages below this UID may have been delivered
    # under their old UIDs: they are deduplicated on Message-ID.
    resync_below: int = 0


class CursorStore(Protocol):
    """Where a mailbox watcher keeps its cursor: :class:`MailState` for the configured
    mailboxes, the subscription's state for a connect_channel mailbox."""

    async def cursor(self, account: str, mailbox: str) -> Cursor | None: ...

    async def set_cursor(self, account: str, mailbox: str, cursor: Cursor) -> None: ...

    async def advance(
        self, account: str, mailbox: str, cursor: Cursor, message_id: str, event_id: str
    ) -> None: ...

    async def seen(self, account: str, mailbox: str, message_id: str) -> str | None: ...
