"""What an outgoing message is: the store's record types, named where the core's
outbox is (channels and tools import them from here)."""

from __future__ import annotations

from wakeful.store.outbox.record import (
    OLD_NOTICE_KEY_PREFIX,
    NewMessage,
    OutgoingMessage,
    approval_of_old_record,
)

__all__ = ["OLD_NOTICE_KEY_PREFIX", "NewMessage", "OutgoingMessage", "approval_of_old_record"]
