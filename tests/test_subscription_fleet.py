"""Mailbox subscriptions in a fleet: one daemon watches each, the others stand by.

Two daemons' lease holders on one Redis prefix (the real Redis), each asked to
watch the same subscription: only one runs the watch; when it stops, the other
takes over within the lease's TTL; another subscription is leased on its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest
from redis.asyncio import Redis

from tests.redis_server import REDIS_URL
from wakeful.channels.subscriptions.fleet import WatchLeases
from wakeful.daemon.store.redis_named_lease import lease_holder

pytestmark = pytest.mark.anyio

TTL_S = 0.6  # short, so a takeover happens within a second


def watch_recorder(running: set[str], name: str) -> Callable[[], Awaitable[None]]:
    async def work() -> None:
        running.add(name)
        try:
            await anyio.sleep_forever()
        finally:
            running.discard(name)

    return work


async def wait_until(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    with anyio.fail_after(timeout_s):
        while not check():  # noqa: ASYNC110 - a lease changing hands has no event to await
            await anyio.sleep(0.02)


async def test_one_daemon_watches_a_subscription_and_another_takes_over(
    redis_prefix: str,
) -> None:
    client = Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        first = WatchLeases(client, redis_prefix, "host:1:a", TTL_S)
        second = WatchLeases(client, redis_prefix, "host:2:b", TTL_S)
        running: set[str] = set()
        async with anyio.create_task_group() as group:
            first_scope = anyio.CancelScope()

            async def first_daemon() -> None:
                with first_scope:
                    await first.hold("sub-1", watch_recorder(running, "first"))

            group.start_soon(first_daemon)
            await wait_until(lambda: running == {"first"})
            group.start_soon(second.hold, "sub-1", watch_recorder(running, "second"))
            group.start_soon(second.hold, "sub-2", watch_recorder(running, "second's sub-2"))
            await wait_until(lambda: "second's sub-2" in running)  # its own lease, at once
            await anyio.sleep(TTL_S * 2)  # renewals happened meanwhile: still one watcher
            assert running == {"first", "second's sub-2"}
            assert await lease_holder(client, first.key("sub-1")) == "host:1:a"
            first_scope.cancel()  # the first daemon stops: its lease is released
            await wait_until(lambda: running == {"second", "second's sub-2"})
            assert await lease_holder(client, first.key("sub-1")) == "host:2:b"
            group.cancel_scope.cancel()
        assert await lease_holder(client, first.key("sub-1")) is None  # released on stop
    finally:
        await client.aclose()
