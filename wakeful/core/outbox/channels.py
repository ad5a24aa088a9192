"""What a channel is to the outbox: a name and one ``deliver`` call (and, optionally,
a way to confirm after a crash that a send went out: ``ConfirmsDelivery``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from wakeful.store.outbox.record import OutgoingMessage


@dataclass(frozen=True)
class Receipt:
    """The channel's word that it took the message, in a sentence the agent can read."""

    channel: str
    detail: str  # e.g. "delivered to chat:web (1 client connected)"


class DeliveryError(Exception):
    """A channel could not take a message; the subclass says whether to retry."""


class TryLater(DeliveryError):
    """Not delivered, nothing left: the deliverer retries with backoff, and not
    before ``retry_after_s`` when the platform said how long to wait (a 429)."""

    def __init__(self, reason: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after_s = retry_after_s


class NeverDeliverable(DeliveryError):
    """Not delivered and it never will be (bad address, refused): the message fails."""


class Channel(Protocol):
    """A destination, and what it promises about a repeated hand-over."""

    name: str
    # True promises that handing it the same message again posts nothing twice (the
    # platform deduplicates, e.g. Matrix's txnId): a send cut off by a crash or a stop
    # is then retried, not left ``unknown``. Every channel says which it is.
    resend_safe: bool

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        """Hand ``message`` over; raise TryLater or NeverDeliverable when it was not.
        Any other exception means the outcome is unknown."""
        ...


@runtime_checkable
class ConfirmsDelivery(Channel, Protocol):
    """Optional: a channel that can find out afterwards whether a message went out
    (e-mail: its Message-ID in the account's Sent folder). The deliverer asks it about
    every message a stop or crash left ``unknown``; a yes settles it ``sent``."""

    async def confirm_delivered(self, message: OutgoingMessage) -> bool | None:
        """True: it went out; False: no trace of it (it stays ``unknown``, never resent);
        None: cannot tell now (the server is down): asked again later."""
        ...
