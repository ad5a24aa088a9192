"""A daemon that died, as the outbox on Redis sees it once its lease has lapsed."""

from __future__ import annotations

from tests.redis_server import delete_prefix
from wakeful.store.base import Store
from wakeful.store.redis_store import RedisStore


def lapse_outbox_owners(store: Store) -> None:
    """Remove every deliverer's lease under the store's prefix (SQLite has none): what a
    dead daemon's lease does after its TTL, without waiting for it."""
    if isinstance(store, RedisStore):
        delete_prefix(f"{store.prefix}outbox:owner:")
