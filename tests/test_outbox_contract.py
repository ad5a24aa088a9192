"""The outgoing-message port's contract, run on both backends (SQLite file, real Redis),
and the deliverer's exactly-once rules on top of it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import pytest

from tests import test_store_contract
from tests.outbox_owners import lapse_outbox_owners
from tests.test_store_contract import Opener
from wakeful.core.outbox.channels import NeverDeliverable, Receipt, TryLater
from wakeful.core.outbox.deliverer import Deliverer
from wakeful.core.outbox.factory import open_outbox
from wakeful.store.outbox.port import OutgoingMessages
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.outbox.states import DeliveryState, IllegalMove

pytestmark = pytest.mark.anyio
PENDING, SENDING, SENT = DeliveryState.PENDING, DeliveryState.SENDING, DeliveryState.SENT
# The event store on each backend, opened on the same data each time (a file, a key prefix).
opener = test_store_contract.opener


@pytest.fixture
async def outbox(opener: Opener) -> AsyncIterator[OutgoingMessages]:
    store = await opener()
    yield await open_outbox(store)
    await store.aclose()


def new(
    key: str, text: str = "hello", session: str = "main", channel: str = "chat:web"
) -> NewMessage:
    return NewMessage(session=session, channel=channel, text=text, key=key, answers="ev-1")


async def test_add_is_idempotent_on_key(outbox: OutgoingMessages) -> None:
    """Adding twice with one key yields the first record; nothing else is added."""
    first = await outbox.add(new("k1", "original"))
    again = await outbox.add(new("k1", "a retry with other text"))
    assert again == first
    assert (first.state, first.attempts, first.text, first.answers) == (
        PENDING,
        0,
        "original",
        "ev-1",
    )
    assert [m.id for m in await outbox.history("main")] == [first.id]


async def test_ids_increase_and_history_pages(outbox: OutgoingMessages) -> None:
    ids = [(await outbox.add(new(f"k{i}", f"m{i}"))).id for i in range(5)]
    assert ids == sorted(ids) and len(set(ids)) == 5
    page = await outbox.history("main", after=ids[1], limit=2)
    assert [m.text for m in page] == ["m2", "m3"]
    assert await outbox.history("other") == []


async def test_claim_is_a_compare_and_set(outbox: OutgoingMessages) -> None:
    """Only one claim wins; it counts an attempt; a wrong old state moves nothing."""
    message = await outbox.add(new("k"))
    claimed = await outbox.move(message.id, PENDING, SENDING)
    assert claimed is not None and (claimed.state, claimed.attempts) == (SENDING, 1)
    assert await outbox.move(message.id, PENDING, SENDING) is None
    assert await outbox.move(message.id + 1000, PENDING, SENDING) is None
    back = await outbox.move(message.id, SENDING, PENDING, error="try later: busy")
    assert back is not None and (back.state, back.last_error, back.attempts) == (
        PENDING,
        "try later: busy",
        1,
    )
    assert [m.id for m in await outbox.pending()] == [message.id]


async def test_illegal_moves_are_refused(outbox: OutgoingMessages) -> None:
    message = await outbox.add(new("k"))
    with pytest.raises(IllegalMove, match="from pending to sent"):
        await outbox.move(message.id, PENDING, SENT)
    with pytest.raises(IllegalMove):
        await outbox.move(message.id, SENT, PENDING)


async def test_sending_left_by_a_crash_becomes_unknown(opener: Opener) -> None:
    """After a reopen, a message left `sending` is marked unknown: visible, not pending."""
    store = await opener()
    outbox = await open_outbox(store)
    message = await outbox.add(new("k"))
    await outbox.move(message.id, PENDING, SENDING)
    await store.aclose()
    lapse_outbox_owners(store)  # ...and its lease lapsed (on Redis)
    store = await opener()
    try:
        outbox = await open_outbox(store)
        [marked] = await outbox.mark_interrupted()
        assert marked.state is DeliveryState.UNKNOWN and "may or may not" in marked.last_error
        assert await outbox.pending() == []
        assert [m.id for m in await outbox.unread("main")] == [message.id]
        assert await outbox.mark_interrupted() == []
    finally:
        await store.aclose()


async def test_unread_until_acknowledged(outbox: OutgoingMessages) -> None:
    """Acknowledging up to an id, or by ids, marks only that session's messages read."""
    a, b, c = [await outbox.add(new(f"k{i}", f"m{i}")) for i in range(3)]
    other = await outbox.add(new("o", session="other"))
    assert await outbox.acknowledge("main", up_to=b.id) == 2
    assert [m.id for m in await outbox.unread("main")] == [c.id]
    assert await outbox.acknowledge("main", up_to=b.id) == 0
    assert await outbox.acknowledge("main", ids=(c.id, other.id)) == 1
    assert await outbox.unread("main") == []
    assert [m.id for m in await outbox.unread("other")] == [other.id]
    # A chat platform's messages are shown by the platform: never unread here.
    await outbox.add(new("p", session="other", channel="chat:telegram:tg"))
    assert [m.id for m in await outbox.unread("other")] == [other.id]
    history = await outbox.history("main")
    assert [m.unread for m in history] == [False, False, False]
    assert all(m.acked_at is not None for m in history) and a.acked_at is None


class Recording:
    """A channel that records what it was given and answers as told."""

    name = "chat:web"
    resend_safe = False

    def __init__(self, error: Exception | None = None) -> None:
        self.delivered: list[OutgoingMessage] = []
        self.error = error

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        await anyio.lowlevel.checkpoint()  # let a competing attempt run, if there is one
        self.delivered.append(message)
        if self.error is not None:
            raise self.error
        return Receipt(self.name, "delivered to chat:web (1 client connected)")


async def test_concurrent_attempts_deliver_once(outbox: OutgoingMessages) -> None:
    channel = Recording()
    deliverer = Deliverer(outbox, [channel])
    message = await outbox.add(new("k"))
    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(deliverer.deliver, message)
    assert [m.id for m in channel.delivered] == [message.id]
    stored = await outbox.get(message.id)
    assert stored is not None and (stored.state, stored.attempts) == (SENT, 1)
    assert deliverer.receipts[message.id].detail.startswith("delivered to chat:web")


@pytest.mark.parametrize(
    ("error", "state", "detail"),
    [
        (TryLater("the server is busy"), DeliveryState.PENDING, "try later: the server is busy"),
        (NeverDeliverable("no such chat"), DeliveryState.FAILED, "no such chat"),
        (ConnectionResetError("reset mid-send"), DeliveryState.UNKNOWN, "reset mid-send"),
    ],
)
async def test_channel_answers_settle_the_state(
    outbox: OutgoingMessages, error: Exception, state: DeliveryState, detail: str
) -> None:
    """ "Try later" goes back to pending, "never" fails, anything else is unknown."""
    deliverer = Deliverer(outbox, [Recording(error)], retry_s=60)
    message = await outbox.add(new("k"))
    await deliverer.deliver(message)
    settled = await deliverer.settled(message.id, timeout_s=1)
    assert settled is not None and settled.state is state and detail in settled.last_error
    # A "try later" is not retried before its backoff: the deliverer waits, it does not spin.
    assert await deliverer.deliver_due() == (
        pytest.approx(60, abs=1) if state is PENDING else float("inf")
    )


async def test_a_platforms_retry_after_outlasts_the_backoff(outbox: OutgoingMessages) -> None:
    """A 429's "retry after 90 s" is not tried again after the 2 s backoff."""
    deliverer = Deliverer(outbox, [Recording(TryLater("429", retry_after_s=90))], retry_s=2)
    message = await outbox.add(new("k"))
    await deliverer.deliver(message)
    assert await deliverer.deliver_due() == pytest.approx(90, abs=1)


async def test_unknown_channel_fails_with_its_name(outbox: OutgoingMessages) -> None:
    deliverer = Deliverer(outbox, [Recording()])
    message = await outbox.add(NewMessage("main", "slack:#ops", "hi", "k"))
    await deliverer.deliver(message)
    stored = await outbox.get(message.id)
    assert stored is not None and stored.state is DeliveryState.FAILED
    assert "no channel named 'slack:#ops'" in stored.last_error


async def test_add_claimed_stores_a_new_message_already_sending(outbox: OutgoingMessages) -> None:
    """One write: new → sending with one attempt, as read back; a known key is not claimed."""
    claimed, mine = await outbox.add_claimed(new("k", "hi"))
    assert mine and (claimed.state, claimed.attempts, claimed.text) == (SENDING, 1, "hi")
    assert await outbox.get(claimed.id) == claimed
    again, mine_again = await outbox.add_claimed(new("k", "other"))
    assert (again, mine_again) == (claimed, False)
    assert await outbox.add(new("k")) == claimed
    assert await outbox.pending() == []


class FlakyOnce(Recording):
    """Says "try later" to the first attempt, then takes the message."""

    def __init__(self) -> None:
        super().__init__(TryLater("rate limited"))
        self.took = anyio.Event()

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        if self.error is not None:
            self.error, error = None, self.error
            raise error
        receipt = await super().deliver(message)
        self.took.set()
        return receipt


async def test_try_later_is_retried_by_the_delivery_task(outbox: OutgoingMessages) -> None:
    """A message the channel put off is delivered by the running deliverer after its
    backoff, with the attempts counted; nobody has to send it again."""
    channel = FlakyOnce()
    deliverer = Deliverer(outbox, [channel], retry_s=0.05)
    async with anyio.create_task_group() as group:
        await group.start(deliverer.run)
        record = await deliverer.deliver_new(new("k"))
        assert record.state is SENDING
        with anyio.fail_after(5):
            await channel.took.wait()
        group.cancel_scope.cancel()
    stored = await outbox.get(record.id)
    assert stored is not None and (stored.state, stored.attempts) == (SENT, 2)
    assert [m.id for m in channel.delivered] == [record.id]


async def test_latest_is_the_sessions_newest_message(outbox: OutgoingMessages) -> None:
    assert await outbox.latest("main") is None
    await outbox.add(new("a", "first"))
    await outbox.add(new("b", "second", channel="chat:telegram:tg"))
    await outbox.add(new("c", "elsewhere", session="other"))
    latest = await outbox.latest("main")
    assert latest is not None and latest.text == "second"


async def test_the_approval_a_notice_is_about_is_stored(outbox: OutgoingMessages) -> None:
    """A notice's ``approval`` is stored and read back by every read; others have none,
    whatever their key looks like."""
    notice = NewMessage("main", "chat:web", "approve?", "k1", approval="abcd2345")
    added = await outbox.add(notice)
    plain = await outbox.add(new("approval:looks-like-one"))
    assert (added.approval, plain.approval) == ("abcd2345", None)
    claimed = await outbox.move(added.id, PENDING, SENDING)
    assert claimed is not None and claimed.approval == "abcd2345"
    assert await outbox.get(added.id) == claimed
    assert [(m.id, m.approval) for m in await outbox.history("main")] == [
        (added.id, "abcd2345"),
        (plain.id, None),
    ]
    assert [m.approval for m in await outbox.pending()] == [None]
    sending, _ = await outbox.add_claimed(
        NewMessage("main", "chat:web", "x", "k2", approval="efgh6789")
    )
    assert sending.approval == "efgh6789"
    assert (await outbox.get(sending.id)) == sending
