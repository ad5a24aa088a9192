"""A Redis client for a component's own keys under ``[store] redis_prefix``.

State that follows a session across daemons (timers, mail state, shell task
ownership, subscription leases) is kept under the event store's prefix but on a
small pool of its own: a blocked pub/sub read or a lease renewal never waits
behind the store's group commits.
"""

from __future__ import annotations

from redis.asyncio import BlockingConnectionPool, Redis

from wakeful.store.config import StoreSection

TIMEOUT_S = 10.0


def component_redis(store: StoreSection, name: str, max_connections: int = 4) -> Redis:
    """A client on ``[store] redis_url`` (strings decoded); close it with ``aclose``."""
    return redis_client(store.redis_url, name, max_connections)


def redis_client(url: str, name: str, max_connections: int = 4) -> Redis:
    """A client of its own on ``url`` (strings decoded), named ``wakeful-<name>``."""
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=TIMEOUT_S,
        decode_responses=True,
        socket_timeout=TIMEOUT_S,
        socket_connect_timeout=TIMEOUT_S,
        client_name=f"wakeful-{name}",
    )
    return Redis.from_pool(pool)
