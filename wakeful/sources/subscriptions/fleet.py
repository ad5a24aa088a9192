"""Who watches a mailbox subscription when daemons share Redis: the holder of its lease.

With ``[store] backend = "redis"`` every daemon of the fleet loads the same
subscriptions; each would open its own IMAP connection for the same one (the
events dedup by id, but N connections and N IDLEs). So, as the email channel
does for its mailboxes (wakeful/channels/email/fleet.py), each subscription's
watch runs only in the daemon holding the named lease
``subscriptions:watch:<id>``; the others stand by and take over when it
lapses (the holder stopped, died, or lost touch with Redis). http_check
subscriptions are leased the same way (one GET per interval across the fleet).

A subscription made or removed through one daemon reaches the others at once,
not at their restart: the daemon that changed it names it on the pub/sub
channel ``subscriptions:changes`` (:class:`ChangeNotices`) and each other daemon
re-reads that record and arms or disarms it. A notice can be missed while the
feed is down (Redis restarted), so a re-subscribed feed re-reads every record.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import anyio
import structlog
from anyio.abc import TaskStatus
from redis.asyncio import Redis
from redis.exceptions import RedisError

from wakeful.store.leases import DEFAULT_TTL_S
from wakeful.store.redis_named_lease import (
    NamedLease,
    hold_while,
    process_holder_id,
)

log = structlog.get_logger(__name__)

RESUBSCRIBE_S = 1.0  # after the feed broke (Redis restarting): try again this soon


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


class ChangeNotices:
    """Tells the other daemons of a fleet which subscription changed, and hears them."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._channel = f"{prefix}subscriptions:changes"
        self._origin = uuid.uuid4().hex  # this daemon's own notices are not applied again

    async def announce(self, sub_id: str) -> None:
        """Best effort: a daemon that misses it still has the record at its next start
        or re-subscribe; the change itself is already in the store."""
        try:
            await self._client.publish(self._channel, f"{self._origin} {sub_id}")
        except RedisError as exc:
            log.warning("could not announce a subscription change", error=str(exc))

    async def follow(
        self,
        changed: Callable[[str], Awaitable[None]],
        resync: Callable[[], Awaitable[None]],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``changed`` for each other daemon's notice until cancelled; after a lost
        feed, subscribe again and ``resync`` (notices may have been missed meanwhile)."""
        started = False
        while True:
            try:
                async with self._client.pubsub() as pubsub:
                    await pubsub.subscribe(self._channel)
                    if started:
                        await resync()
                    else:
                        started = True
                        task_status.started()
                    async for message in pubsub.listen():
                        if message.get("type") != "message":
                            continue
                        origin, _, sub_id = str(message["data"]).partition(" ")
                        if origin != self._origin and sub_id:
                            await changed(sub_id)
            except RedisError as exc:
                log.warning("lost the subscription change feed; subscribing again", error=str(exc))
                await anyio.sleep(RESUBSCRIBE_S)
