"""What the store hands out beside its events, on both backends: the outbox's messages,
the timers' job store, and the coordination of daemons sharing the store.

The backends themselves have their own tests (the outbox contract, the timers, the
fleets of shell tasks and subscriptions); here: that each store hands out the one
that lives where it does, and the Redis coordination's roster and notices keep
their promises (a compare-and-delete acts once; a daemon hears the others' notices,
never its own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.redis_server import REDIS_URL
from wakeful.store.base import Store
from wakeful.store.fleet.port import Coordination
from wakeful.store.outbox.record import NewMessage
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore
from wakeful.store.timers.port import PendingFire

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "redis"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str
) -> AsyncIterator[Store]:
    opened: Store
    if request.param == "redis":
        opened = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    else:
        opened = await SqliteStore(tmp_path / "wakeful.db").open()
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_the_outbox_is_on_the_store_and_survives_reopening(store: Store) -> None:
    first = await store.outbox_messages()
    added = await first.add(NewMessage("main", "chat:web", "hello", key="k1"))
    again = await store.outbox_messages()  # a restart opens it again on the same store
    assert await again.get(added.id) == added
    assert (await again.add(NewMessage("main", "chat:web", "other", key="k1"))).id == added.id


async def test_the_timer_job_store_keeps_a_fire_in_flight_across_opens(store: Store) -> None:
    fire = PendingFire("job-1", datetime(2030, 1, 1, tzinfo=UTC), {"message": "tick"})
    if isinstance(store, RedisStore):  # Redis records a fire only for a job it still has
        client = redis.Redis.from_url(REDIS_URL)
        client.hset(f"{store.prefix}timer:jobs", "job-1", "")  # unreadable: skipped at start
        client.close()
    async with store.timer_jobs() as jobs:
        assert jobs.pending_fires == []
        jobs.record_fire(fire)
        await jobs.drain()  # no writer task here: commits what is queued
        assert await jobs.claim_fire(fire)
        jobs.close()
    async with store.timer_jobs() as jobs:  # the next start replays it
        assert jobs.pending_fires == [fire]
        jobs.close()


async def test_coordination_is_none_only_where_one_daemon_has_the_store(store: Store) -> None:
    async with store.coordination("test") as coordination:
        assert (coordination is None) == isinstance(store, SqliteStore)


@pytest.fixture
async def two_daemons(redis_prefix: str) -> AsyncIterator[tuple[Coordination, Coordination]]:
    """The coordination of two daemons sharing one Redis prefix."""
    stores = [await RedisStore(REDIS_URL, prefix=redis_prefix).open() for _ in range(2)]
    try:
        async with (
            stores[0].coordination("a") as first,
            stores[1].coordination("b") as second,
        ):
            assert first is not None and second is not None
            yield first, second
    finally:
        for opened in stores:
            await opened.aclose()


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=5))
async def test_a_roster_entry_is_deleted_once_and_only_if_unchanged(
    two_daemons: tuple[Coordination, Coordination], values: list[str]
) -> None:
    first, second = (c.roster("test:roster") for c in two_daemons)
    await first.put("task", values[0])
    for value in values[1:]:
        await second.put("task", value)  # changed by the other daemon since first read it
    assert await first.entries() == {"task": values[-1]}
    if values[0] != values[-1]:
        assert not await first.delete_if("task", values[0])
        assert await second.entries() == {"task": values[-1]}
    assert await first.delete_if("task", values[-1])
    assert not await second.delete_if("task", values[-1])  # already gone: acted on once
    assert await second.entries() == {}


async def test_a_lease_lapses_for_the_others_when_its_holder_lets_go(
    two_daemons: tuple[Coordination, Coordination],
) -> None:
    first, second = two_daemons
    assert first.holder != second.holder
    lease = first.lease("test:owner", ttl_s=5)
    assert await second.lapsed("test:owner")
    assert await lease.acquire()
    assert not await second.lapsed("test:owner")
    assert not await second.lease("test:owner", ttl_s=5).acquire()  # held by the first

    async def work() -> None:
        return None  # returning ends the hold, which lets the lease go

    await lease.hold(work)
    assert await second.lapsed("test:owner")


async def test_a_daemon_hears_the_others_notices_and_not_its_own(
    two_daemons: tuple[Coordination, Coordination],
) -> None:
    first, second = (c.notices("test:changes") for c in two_daemons)
    heard: list[str] = []
    arrived = anyio.Event()

    async def changed(name: str) -> None:
        heard.append(name)
        if name == "from-second":
            arrived.set()

    async def resync() -> None:
        raise AssertionError("the feed was not lost")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            await group.start(first.follow, changed, resync)
            await first.announce("from-first")  # its own: not applied again
            await second.announce("from-second")
            await arrived.wait()
            group.cancel_scope.cancel()
    assert heard == ["from-second"]
