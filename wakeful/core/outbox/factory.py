"""The outbox backend that lives where the event store does."""

from __future__ import annotations

from wakeful.core.outbox.port import OutgoingMessages
from wakeful.store.base import Store


async def open_outbox(store: Store) -> OutgoingMessages:
    """The outbox on ``store``'s own connection (its table, or its key prefix)."""
    from wakeful.store.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        from wakeful.core.outbox.sqlite_backend import SqliteOutbox

        return await SqliteOutbox(store).open()
    from wakeful.store.redis_store import RedisStore  # only when used

    if isinstance(store, RedisStore):
        from wakeful.core.outbox.redis_backend import RedisOutbox

        return await RedisOutbox(store).open()
    raise TypeError(f"no outbox backend for a {type(store).__name__}")
