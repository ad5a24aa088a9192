"""The named lease on the real Redis: one holder at a time, fencing, renewal, loss."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from redis.asyncio import Redis

from tests.redis_server import REDIS_URL
from wakeful.store.fleet.named_lease import NamedLease, hold_while, lease_holder

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client() -> AsyncIterator[Redis]:
    client = Redis.from_url(REDIS_URL, decode_responses=True)
    yield client
    await client.aclose()


async def test_one_holder_at_a_time_and_tokens_grow(client: Redis, redis_prefix: str) -> None:
    """A second holder is refused while the first holds; after release it gets a larger token."""
    key = f"{redis_prefix}lease:mailbox"
    first, second = NamedLease(client, key, "a"), NamedLease(client, key, "b")
    assert await first.acquire()
    assert not await second.acquire()
    assert await lease_holder(client, key) == "a"
    assert await first.held() and not await second.held()
    token = first.token
    await first.release()
    assert await lease_holder(client, key) is None
    assert await second.acquire()
    assert second.token is not None and token is not None and second.token > token


async def test_a_lapsed_holder_cannot_renew_or_release_its_successor(
    client: Redis, redis_prefix: str
) -> None:
    """After the TTL passes another holder takes over; the old one's renew and release fail."""
    key = f"{redis_prefix}lease:x"
    old, new = NamedLease(client, key, "old", ttl_s=0.2), NamedLease(client, key, "new")
    assert await old.acquire()
    assert not await new.acquire()
    await anyio.sleep(await new.wait_s() + 0.05)  # the old holder's TTL running out
    assert await new.acquire()
    assert not await old.renew()
    await old.release()
    assert await lease_holder(client, key) == "new"


async def test_holder_renews_past_its_ttl(client: Redis, redis_prefix: str) -> None:
    """Work that outlasts several TTLs keeps the lease; it is released when the work ends."""
    key = f"{redis_prefix}lease:long"
    lease = NamedLease(client, key, "worker", ttl_s=0.3)

    async def work() -> None:
        await anyio.sleep(1.0)  # the duration is the point: three TTLs of work
        assert await lease.held()

    with anyio.fail_after(5):
        await hold_while(lease, work)
    assert await lease_holder(client, key) is None


async def test_work_is_cancelled_when_the_lease_is_taken(client: Redis, redis_prefix: str) -> None:
    """A holder whose lease another took (as after a pause) stops its work and waits again."""
    key = f"{redis_prefix}lease:stolen"
    lease = NamedLease(client, key, "victim", ttl_s=0.3)
    started, lost, again = anyio.Event(), anyio.Event(), anyio.Event()

    async def work() -> None:
        (again if started.is_set() else started).set()
        await anyio.sleep_forever()

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: hold_while(lease, work, on_lost=lost.set))
        with anyio.fail_after(5):
            await started.wait()
            await client.set(key, "thief 999999", px=600)  # as if ours had lapsed
            await lost.wait()
            assert await lease_holder(client, key) == "thief"
            await again.wait()  # the thief's lease lapsed; the holder took it again
        group.cancel_scope.cancel()
    assert await lease_holder(client, key) is None
