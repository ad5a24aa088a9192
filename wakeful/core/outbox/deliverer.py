"""The one place a message is sent: claim (``sending``, committed), deliver, settle.

Exactly once: a message is handed to its channel only by the task that won
the ``pending → sending`` compare-and-set, and a message found ``sending``
at start is marked ``unknown`` — visible, never resent — because the
process may have died after the channel took it. A channel that drops repeats
itself (``resend_safe``, Matrix's txnId) gets such a message again instead.
Where daemons share the outbox (Redis), a claim names its daemon, and only a
daemon that is gone has its ``sending`` messages settled so (``watch_claims``).
A channel that can look afterwards (``ConfirmsDelivery``: e-mail searches its
Sent folder) is asked about each message so left ``unknown``: found, it is
settled ``sent``; not found, it stays ``unknown``; no answer, asked again later.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.core.outbox.channels import (
    Channel,
    ConfirmsDelivery,
    NeverDeliverable,
    Receipt,
    TryLater,
)
from wakeful.kernel import tracing
from wakeful.store.base import StoreUnavailable
from wakeful.store.outbox.port import OutgoingMessages
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.outbox.states import (
    CONFIRMED_AFTER_STOP,
    RESENT_AFTER_STOP,
    STOPPED_MID_SEND,
    DeliveryState,
)

log = structlog.get_logger(__name__)

SENDING, PENDING = DeliveryState.SENDING, DeliveryState.PENDING
MAX_BACKOFF_S = 300.0
# How long a start waits for channels to confirm what a crash left unknown (an IMAP
# search on loopback takes milliseconds); what is not answered by then is asked later.
CONFIRM_AT_START_S = 5.0


@dataclass(frozen=True)
class Delivery:
    """What became of one ``deliver_settled`` call."""

    message: OutgoingMessage  # as it stands after the attempt (or the wait)
    receipt: Receipt | None  # the channel's word, when this call's attempt delivered it
    created: bool  # False: the key was known, so nothing new was handed over


class Deliverer:
    def __init__(
        self, outbox: OutgoingMessages, channels: Iterable[Channel], retry_s: float = 2.0
    ) -> None:
        self.outbox = outbox
        self.channels = {channel.name: channel for channel in channels}
        self._retry_s = retry_s
        self._wakeup = anyio.Event()
        self._not_before: dict[int, float] = {}  # "try later" answers, by message id
        self._settled: dict[int, anyio.Event] = {}
        self.receipts: dict[int, Receipt] = {}  # the last few, for whoever awaits a send
        # Left unknown by a stop, on a channel that can confirm: by message id, the
        # message, that channel, when to ask next and how often it could not tell.
        self._unconfirmed: dict[int, tuple[OutgoingMessage, ConfirmsDelivery, float, int]] = {}
        self._confirm_wakeup = anyio.Event()

    def notify(self) -> None:
        """Pending messages or a new retry time: look again now."""
        self._wakeup.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        safe = [name for name, channel in self.channels.items() if channel.resend_safe]
        self._left_mid_send(await self.outbox.mark_interrupted(resend=safe))
        # Before the sessions resume, so a tool asking about such a message finds it
        # settled; a channel slower than this is asked again in the background.
        with anyio.move_on_after(CONFIRM_AT_START_S):
            await self._confirm_due()
        task_status.started()
        async with anyio.create_task_group() as group:
            # Daemons sharing the outbox: sends of one that died are settled while we run.
            group.start_soon(self.outbox.watch_claims, safe, self._left_mid_send)
            group.start_soon(self._confirm_forever)
            await self._deliver_forever()

    def _left_mid_send(self, messages: list[OutgoingMessage]) -> None:
        for message in messages:
            if message.state is PENDING:
                log.info("outgoing message left mid-send; sent again", message_id=message.id)
                self.notify()
            else:
                log.warning("outgoing message left mid-send; not resent", message_id=message.id)
                channel = self.channels.get(message.channel)
                if isinstance(channel, ConfirmsDelivery):
                    self._unconfirmed[message.id] = (message, channel, 0.0, 0)
                    self._confirm_wakeup.set()
            self._settle(message.id)

    async def _confirm_forever(self) -> None:
        while True:
            self._confirm_wakeup = anyio.Event()
            try:
                wait_s = await self._confirm_due()
            except StoreUnavailable as exc:  # the message stays queued for confirmation
                log.warning("outbox unavailable; confirmation retried later", error=str(exc))
                wait_s = self._retry_s
            with anyio.move_on_after(wait_s):
                await self._confirm_wakeup.wait()

    async def _confirm_due(self) -> float:
        """Ask each channel about the messages due; seconds until the next is due."""
        now, next_due = time.monotonic(), math.inf
        for message_id, (message, channel, due, tries) in list(self._unconfirmed.items()):
            if due > now:
                next_due = min(next_due, due - now)
                continue
            try:
                found = await channel.confirm_delivered(message)
            except Exception as exc:  # a channel's failure is "cannot tell now"
                log.warning("confirming a send failed", message_id=message_id, error=repr(exc))
                found = None
            if found is None:
                backoff = min(MAX_BACKOFF_S, self._retry_s * 2**tries)
                due = time.monotonic() + backoff
                self._unconfirmed[message_id] = (message, channel, due, tries + 1)
                next_due = min(next_due, backoff)
                continue
            if found:  # compare-and-set: nothing else may have moved it since
                await self._record(
                    message_id, DeliveryState.UNKNOWN, DeliveryState.SENT, CONFIRMED_AFTER_STOP
                )
                log.info("a send left unknown was confirmed", message_id=message_id)
            del self._unconfirmed[message_id]
            self._settle(message_id)
        return next_due

    async def _deliver_forever(self) -> None:
        while True:
            self._wakeup = anyio.Event()
            try:
                wait_s = await self.deliver_due()
            except StoreUnavailable as exc:
                # The messages stay where they are; the store recovering is waited out.
                log.warning("outbox unavailable; delivery retried later", error=str(exc))
                wait_s = self._retry_s
            with anyio.move_on_after(wait_s):
                await self._wakeup.wait()

    async def deliver_due(self) -> float:
        """Deliver every pending message that is due; seconds until the next retry."""
        now, next_due = time.monotonic(), math.inf
        for message in await self.outbox.pending():
            due = self._not_before.get(message.id, 0.0)
            if due > now:
                next_due = min(next_due, due - now)
                continue
            await self.deliver(message)
        return next_due

    async def settled(self, message_id: int, timeout_s: float) -> OutgoingMessage | None:
        """The message once a delivery attempt has settled (or as it is after timeout)."""
        event = self._settled.setdefault(message_id, anyio.Event())
        message = await self.outbox.get(message_id)
        if _has_settled(message):
            return message
        with anyio.move_on_after(timeout_s):
            await event.wait()
        return await self.outbox.get(message_id)

    async def enqueue(self, message: NewMessage) -> OutgoingMessage:
        """Store ``message`` (once per key) for the delivery task to send: for callers
        that must not wait on a platform (an HTTP handler with a deadline, a poll loop)."""
        record = await self.outbox.add(message)
        self.notify()
        return record

    async def deliver_new(self, message: NewMessage) -> OutgoingMessage:
        """Store ``message`` claimed and deliver it now; a known key is not sent again
        (it is delivered only if it is still pending)."""
        return (await self._deliver_new(message))[0]

    async def deliver_settled(self, message: NewMessage, timeout_s: float) -> Delivery:
        """``deliver_new``, then the message as the attempt left it (waiting at most
        ``timeout_s`` for another task's attempt at the same key)."""
        record, created = await self._deliver_new(message)
        settled = await self.settled(record.id, timeout_s) or record
        return Delivery(settled, self.receipts.get(record.id) if created else None, created)

    async def _deliver_new(self, message: NewMessage) -> tuple[OutgoingMessage, bool]:
        """The record, and whether this call created it: the store's own word (one write
        stores it claimed), so a known key is never called new, whatever its state."""
        record, created = await self.outbox.add_claimed(message)
        if created:
            channel = self.channels.get(message.channel)
            if channel is None:
                await self._record(record.id, SENDING, DeliveryState.FAILED, _no_channel(record))
            else:
                await self._attempt(channel, record)
            self._settle(record.id)
        elif record.state is PENDING:
            await self.deliver(record)
        return record, created

    async def deliver(self, message: OutgoingMessage) -> None:
        channel = self.channels.get(message.channel)
        if channel is None:
            await self._record(message.id, PENDING, DeliveryState.FAILED, _no_channel(message))
        elif (claimed := await self.outbox.move(message.id, PENDING, SENDING)) is not None:
            await self._attempt(channel, claimed)
        self._settle(message.id)

    async def _attempt(self, channel: Channel, message: OutgoingMessage) -> None:
        # A child of the step that sent it (the reply's tool call or the run's answer);
        # a retry from the delivery task is a trace of its own. Never the text.
        with tracing.tracer().span(
            f"deliver {channel.name}",
            {
                "wakeful.outbox.channel": channel.name,
                "wakeful.outbox.message_id": message.id,
                "wakeful.outbox.attempt": message.attempts,
            },
            kind="producer",
        ) as span:
            state = await self._attempt_once(channel, message)
            span.set("wakeful.outbox.state", state.value)
            if state is not DeliveryState.SENT:
                span.fail(state.value)

    async def _attempt_once(self, channel: Channel, message: OutgoingMessage) -> DeliveryState:
        """Hand ``message`` to ``channel`` and record the outcome; the state it is left in."""
        try:
            receipt = await channel.deliver(message)
        except anyio.get_cancelled_exc_class():
            if channel.resend_safe:  # sent again at the next start; the channel drops repeats
                await self._record(message.id, SENDING, PENDING, RESENT_AFTER_STOP)
            else:
                await self._record(message.id, SENDING, DeliveryState.UNKNOWN, STOPPED_MID_SEND)
            raise
        except TryLater as exc:
            backoff = min(MAX_BACKOFF_S, self._retry_s * 2 ** (message.attempts - 1))
            backoff = max(backoff, exc.retry_after_s or 0.0)  # the platform's word wins
            self._not_before[message.id] = time.monotonic() + backoff
            await self._record(message.id, SENDING, PENDING, f"try later: {exc}")
            self.notify()  # the delivery task schedules the retry
            return PENDING
        except NeverDeliverable as exc:
            await self._record(message.id, SENDING, DeliveryState.FAILED, str(exc))
            return DeliveryState.FAILED
        except Exception as exc:
            log.exception("channel failed mid-send", message_id=message.id, channel=channel.name)
            error = f"{type(exc).__name__}: {exc}"
            await self._record(message.id, SENDING, DeliveryState.UNKNOWN, error)
            return DeliveryState.UNKNOWN
        self._not_before.pop(message.id, None)
        self.receipts[message.id] = receipt
        await self._record(message.id, SENDING, DeliveryState.SENT, "")
        return DeliveryState.SENT

    async def _record(
        self, message_id: int, old: DeliveryState, new: DeliveryState, error: str
    ) -> None:
        # Shielded: once a message was handed over, its outcome is always written.
        with anyio.CancelScope(shield=True):
            await self.outbox.move(message_id, old, new, error=error)

    def _settle(self, message_id: int) -> None:
        event = self._settled.pop(message_id, None)
        if event is not None:
            event.set()
        while len(self.receipts) > 1000:
            self.receipts.pop(next(iter(self.receipts)))


def _no_channel(message: OutgoingMessage) -> str:
    return f"no channel named {message.channel!r} is configured"


def _has_settled(message: OutgoingMessage | None) -> bool:
    """Past an attempt: not in flight, and not pending unless a "try later" put it back."""
    if message is None or message.state is SENDING:
        return message is None
    return message.state is not PENDING or message.attempts > 0
