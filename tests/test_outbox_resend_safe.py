"""Channels that drop a repeated send themselves (``resend_safe``, Matrix's txnId): a send
cut off by a crash or a stop is sent again, on both outbox backends; others stay unknown."""

from __future__ import annotations

import anyio
import pytest

from tests import test_store_contract
from tests.outbox_owners import lapse_outbox_owners
from tests.test_store_contract import Opener
from wakeful.core.outbox.channels import Receipt
from wakeful.core.outbox.deliverer import Deliverer
from wakeful.core.outbox.factory import open_outbox
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.outbox.states import DeliveryState

pytestmark = pytest.mark.anyio
PENDING, SENDING = DeliveryState.PENDING, DeliveryState.SENDING
opener = test_store_contract.opener


def new(key: str, channel: str) -> NewMessage:
    return NewMessage(session="main", channel=channel, text="hello", key=key, address="!room")


async def test_a_crash_mid_send_is_resent_only_where_the_channel_drops_repeats(
    opener: Opener,
) -> None:
    store = await opener()
    outbox = await open_outbox(store)
    safe = await outbox.add(new("a", "chat:matrix:home"))
    blind = await outbox.add(new("b", "chat:telegram:tg"))
    for message in (safe, blind):
        await outbox.move(message.id, PENDING, SENDING)
    await store.aclose()  # the process died here
    lapse_outbox_owners(store)  # ...and its lease lapsed (on Redis)
    store = await opener()
    try:
        outbox = await open_outbox(store)
        marked = await outbox.mark_interrupted(resend=["chat:matrix:home"])
        assert {m.id: m.state for m in marked} == {
            safe.id: DeliveryState.PENDING,
            blind.id: DeliveryState.UNKNOWN,
        }
        assert [m.id for m in await outbox.pending()] == [safe.id]
        assert "sent again" in marked[0].last_error
    finally:
        await store.aclose()


class Hanging:
    """A resend-safe channel whose send never returns (a homeserver that stopped answering)."""

    name = "chat:matrix:home"
    resend_safe = True

    def __init__(self) -> None:
        self.entered = anyio.Event()

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        self.entered.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_stop_mid_send_leaves_it_pending_on_a_resend_safe_channel(opener: Opener) -> None:
    store = await opener()
    try:
        outbox = await open_outbox(store)
        channel = Hanging()
        deliverer = Deliverer(outbox, [channel])
        message = await outbox.add(new("k", channel.name))
        async with anyio.create_task_group() as group:
            group.start_soon(deliverer.deliver, message)
            await channel.entered.wait()
            group.cancel_scope.cancel()  # the daemon stopping
        stored = await outbox.get(message.id)
        assert stored is not None and stored.state is PENDING
    finally:
        await store.aclose()
