"""The outbox on Redis shared by several daemons: each send claimed by one deliverer, and
a send whose daemon is gone settled as unknown, never resent; a live one left alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from tests.redis_server import REDIS_URL
from wakeful.core.outbox.channels import Receipt
from wakeful.core.outbox.deliverer import Deliverer
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.outbox.redis import RedisOutbox
from wakeful.store.outbox.states import DeliveryState
from wakeful.store.redis_store import RedisStore

pytestmark = pytest.mark.anyio
CHANNEL = "chat:fleet"
TTL_S = 0.3  # the deliverers' leases: a gone daemon is noticed within about two of these


class Recording:
    """One platform both daemons deliver to: it records every message it is handed."""

    name = CHANNEL
    resend_safe = False

    def __init__(self, delivered: list[tuple[str, int]], who: str) -> None:
        self.delivered = delivered
        self.who = who
        self.hold: anyio.Event | None = None  # set: each send waits for it
        self.entered = anyio.Event()

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        self.delivered.append((self.who, message.id))
        self.entered.set()
        if self.hold is not None:
            await self.hold.wait()
        await anyio.lowlevel.checkpoint()
        return Receipt(CHANNEL, f"delivered by {self.who}")


@asynccontextmanager
async def outbox_on(prefix: str) -> AsyncIterator[RedisOutbox]:
    store = await RedisStore(REDIS_URL, prefix=prefix).open()
    try:
        yield await RedisOutbox(store, owner_ttl_s=TTL_S).open()
    finally:
        await store.aclose()


def message(n: int) -> NewMessage:
    return NewMessage(session="main", channel=CHANNEL, text=f"m{n}", key=f"k{n}")


async def state_of(outbox: RedisOutbox, message_id: int) -> DeliveryState | None:
    found = await outbox.get(message_id)
    return None if found is None else found.state


async def all_sent(outbox: RedisOutbox, records: list[OutgoingMessage]) -> bool:
    found = [await outbox.get(record.id) for record in records]
    return all(m is not None and m.state is DeliveryState.SENT for m in found)


async def test_two_deliverers_deliver_each_message_once(redis_prefix: str) -> None:
    """Messages added on either daemon are each handed to the channel exactly once."""
    delivered: list[tuple[str, int]] = []
    async with outbox_on(redis_prefix) as one, outbox_on(redis_prefix) as two:
        first = Deliverer(one, [Recording(delivered, "one")])
        second = Deliverer(two, [Recording(delivered, "two")])
        async with anyio.create_task_group() as group:
            await group.start(first.run)
            await group.start(second.run)
            added = [await (one if n % 2 else two).add(message(n)) for n in range(30)]
            first.notify()
            second.notify()
            with anyio.fail_after(10):
                while not await all_sent(one, added):  # noqa: ASYNC110 - two daemons settle
                    await anyio.sleep(0.02)
            group.cancel_scope.cancel()
    counts = Counter(message_id for _, message_id in delivered)
    assert sorted(counts) == sorted(r.id for r in added)
    assert set(counts.values()) == {1}, counts


async def test_a_gone_daemons_send_becomes_unknown_and_a_live_one_is_left(
    redis_prefix: str,
) -> None:
    """A claim whose daemon's lease lapsed is settled unknown by a running deliverer;
    a live daemon's send that outlasts several TTLs is not touched and ends sent."""
    delivered: list[tuple[str, int]] = []
    async with (
        outbox_on(redis_prefix) as gone,
        outbox_on(redis_prefix) as live,
        outbox_on(redis_prefix) as watcher,
    ):
        orphan = await gone.add(message(1))
        assert await gone.move(orphan.id, DeliveryState.PENDING, DeliveryState.SENDING)
        # `gone` never runs a deliverer: nothing renews its lease, which lapses.
        slow = Recording(delivered, "live")
        slow.hold = anyio.Event()
        live_deliverer = Deliverer(live, [slow])
        watching = Deliverer(watcher, [Recording(delivered, "watcher")])
        async with anyio.create_task_group() as group:
            await group.start(live_deliverer.run)
            await group.start(watching.run)
            in_flight = await live.add(message(2))
            live_deliverer.notify()
            with anyio.fail_after(5):
                await slow.entered.wait()
            with anyio.fail_after(5):  # settled by whichever running deliverer sweeps first
                while await state_of(watcher, orphan.id) is DeliveryState.SENDING:  # noqa: ASYNC110
                    await anyio.sleep(0.02)
            settled = await watcher.get(orphan.id)
            assert settled is not None and settled.state is DeliveryState.UNKNOWN
            assert "may or may not have arrived" in settled.last_error
            await anyio.sleep(3 * TTL_S)  # several sweeps pass while the live send is held
            assert await state_of(watcher, in_flight.id) is DeliveryState.SENDING
            slow.hold.set()
            done = await live_deliverer.settled(in_flight.id, 5)
            assert done is not None and done.state is DeliveryState.SENT
            group.cancel_scope.cancel()
    assert delivered == [("live", in_flight.id)]  # the orphan was never handed over again
