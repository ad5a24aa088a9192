"""``Delivery.created`` is the truth on every backend: for any sequence of deliveries with
repeated keys, it is true exactly for the first delivery of each key, whether its channel
is configured, answers "try later", or is not configured at all."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_outbox_contract import Recording, opener, outbox  # noqa: F401 (fixtures)
from wakeful.core.outbox.channels import TryLater
from wakeful.core.outbox.deliverer import Deliverer
from wakeful.store.outbox.port import OutgoingMessages
from wakeful.store.outbox.record import NewMessage
from wakeful.store.outbox.states import DeliveryState

pytestmark = pytest.mark.anyio

# (key, channel): a few keys so they repeat; "chat:web" answers, "chat:nowhere" is not
# configured. The channel of a repeat may differ from its first: the first record stands.
DELIVERIES = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(["chat:web", "chat:nowhere"])),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(deliveries=DELIVERIES, try_later=st.booleans())
async def test_created_is_true_exactly_for_the_first_delivery_of_each_key(
    outbox: OutgoingMessages,  # noqa: F811 (the fixture)
    deliveries: list[tuple[int, str]],
    try_later: bool,
) -> None:
    run = uuid.uuid4().hex  # the fixture's outbox outlives one example: keys of their own
    channel = Recording(TryLater("busy", retry_after_s=60) if try_later else None)
    deliverer = Deliverer(outbox, [channel])
    seen: set[int] = set()
    for key, channel_name in deliveries:
        message = NewMessage("main", channel_name, f"text {key}", f"{run}:{key}")
        delivery = await deliverer.deliver_settled(message, timeout_s=0)
        assert delivery.created is (key not in seen), (key, channel_name, delivery)
        seen.add(key)
    if not try_later:  # a channel that took a message is never handed it again
        handed = [m.key for m in channel.delivered]
        assert len(handed) == len(set(handed))


async def test_a_message_for_no_configured_channel_fails_at_once_and_is_not_new_again(
    outbox: OutgoingMessages,  # noqa: F811 (the fixture)
) -> None:
    """The case the report was once wrong in: no such channel, the same key twice."""
    deliverer = Deliverer(outbox, [Recording()])
    message = NewMessage("main", "slack:#ops", "hi", "k")
    first = await deliverer.deliver_settled(message, timeout_s=1)
    again = await deliverer.deliver_settled(message, timeout_s=1)
    assert (first.created, again.created) == (True, False)
    assert first.message.state is again.message.state is DeliveryState.FAILED
    assert "no channel named 'slack:#ops'" in again.message.last_error
    assert first.receipt is again.receipt is None
