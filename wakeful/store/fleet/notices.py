"""Change notices on Redis pub/sub: a daemon names what it changed; the others hear it.

One channel per topic under the store's prefix (``subscriptions:changes``). Each
notice carries its sender's nonce, so a daemon never applies its own. A notice
can be missed while the feed is down (Redis restarted): a re-subscribed feed
calls ``resync`` so the follower re-reads everything.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import anyio
import structlog
from anyio.abc import TaskStatus
from redis.asyncio import Redis
from redis.exceptions import RedisError

log = structlog.get_logger(__name__)

RESUBSCRIBE_S = 1.0  # after the feed broke (Redis restarting): try again this soon


class RedisChangeNotices:
    """``ChangeNotices`` on the channel ``<prefix><topic>``."""

    def __init__(self, client: Redis, channel: str, *, origin: str = "") -> None:
        """``origin``: how this daemon signs its notices, which it does not apply again
        (given by a caller that publishes them itself, in a transaction of its own)."""
        self._client = client
        self._channel = channel
        self._origin = origin or uuid.uuid4().hex

    async def announce(self, name: str) -> None:
        """Best effort: a daemon that misses it still has the record at its next start
        or re-subscribe; the change itself is already in the store."""
        try:
            await self._client.publish(self._channel, f"{self._origin} {name}")
        except RedisError as exc:
            log.warning("could not announce a change", channel=self._channel, error=str(exc))

    async def follow(
        self,
        changed: Callable[[str], Awaitable[None]],
        resync: Callable[[], Awaitable[None]],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
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
                        origin, _, name = str(message["data"]).partition(" ")
                        if origin != self._origin and name:
                            await changed(name)
            except RedisError as exc:
                log.warning(
                    "lost a change feed; subscribing again", channel=self._channel, error=str(exc)
                )
                await anyio.sleep(RESUBSCRIBE_S)
