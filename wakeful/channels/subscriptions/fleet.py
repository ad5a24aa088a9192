"""Who watches a mailbox subscription when daemons share Redis: the holder of its lease.

With ``[store] backend = "redis"`` every daemon of the fleet loads the same
subscriptions; each would open its own IMAP connection for the same one (the
events dedup by id, but N connections and N IDLEs). So, as the email channel
does for its mailboxes (wakeful/channels/email/fleet.py), each subscription's
watch runs only in the daemon holding the named lease
``subscriptions:watch:<id>``; the others stand by and take over when it
lapses (the holder stopped, died, or lost touch with Redis).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from wakeful.daemon.store.redis_named_lease import (
    DEFAULT_TTL_S,
    NamedLease,
    hold_while,
    process_holder_id,
)


class WatchLeases:
    def __init__(
        self, client: Redis, prefix: str, holder: str = "", ttl_s: float = DEFAULT_TTL_S
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._holder = holder or process_holder_id()
        self._ttl_s = ttl_s

    def key(self, sub_id: str) -> str:
        return f"{self._prefix}subscriptions:watch:{sub_id}"

    async def hold(
        self,
        sub_id: str,
        work: Callable[[], Awaitable[None]],
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        """Run ``work`` only while this daemon holds the subscription's lease (until
        cancelled, or ``work`` returns); released when it ends."""
        lease = NamedLease(self._client, self.key(sub_id), self._holder, self._ttl_s)
        await hold_while(lease, work, on_lost=on_lost)
