"""The outbox backend that lives where the event store does."""

from __future__ import annotations

from wakeful.store.base import Store
from wakeful.store.outbox.port import OutgoingMessages


async def open_outbox(store: Store) -> OutgoingMessages:
    """The outbox on ``store``'s own connection (its table, or its key prefix): the
    store hands out its own backend (``wakeful/store/outbox/``)."""
    return await store.outbox_messages()
