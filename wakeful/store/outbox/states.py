"""The one state machine of every outgoing message (chat replies, email).

A message moves ``pending → sending → sent``. ``sending`` is committed before
the channel is called, so a process that dies mid-send leaves evidence: the
row is marked ``unknown`` at the next start and never sent again blindly.
``failed`` is the channel's final "no"; ``sending → pending`` is the channel's
"try later". Every backend moves a row only by a compare-and-set on its
state, checked here first.
"""

from __future__ import annotations

from enum import StrEnum


class DeliveryState(StrEnum):
    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    UNKNOWN = "unknown"
    FAILED = "failed"

    @classmethod
    def parse(cls, stored: str) -> DeliveryState:
        """A stored value, including names older rows carry."""
        return LEGACY_NAMES.get(stored) or cls(stored)


STOPPED_MID_SEND = "the daemon stopped while this was being sent; it may or may not have arrived"
CONFIRMED_AFTER_STOP = (
    "the daemon stopped while this was being sent; the channel confirmed afterwards that it "
    "went out"
)
RESENT_AFTER_STOP = (
    "the daemon stopped while this was being sent; sent again (the channel drops a repeat)"
)

# The email outbox called "pending" "prepared" before the states were shared.
LEGACY_NAMES = {"prepared": DeliveryState.PENDING}

ALLOWED_MOVES: frozenset[tuple[DeliveryState, DeliveryState]] = frozenset(
    {
        (DeliveryState.PENDING, DeliveryState.SENDING),  # claimed for one attempt
        (DeliveryState.PENDING, DeliveryState.FAILED),  # no such channel, say
        (DeliveryState.SENDING, DeliveryState.SENT),
        (DeliveryState.SENDING, DeliveryState.PENDING),  # the channel said "try later"
        (DeliveryState.SENDING, DeliveryState.FAILED),  # the channel said "never"
        (DeliveryState.SENDING, DeliveryState.UNKNOWN),  # died or lost the answer mid-send
        # A channel that can look (e-mail's Sent folder) found it went out after all.
        (DeliveryState.UNKNOWN, DeliveryState.SENT),
    }
)


class IllegalMove(ValueError):
    """A transition the state machine does not allow (a bug, not a race)."""


def check_move(old: DeliveryState, new: DeliveryState) -> None:
    if (old, new) not in ALLOWED_MOVES:
        raise IllegalMove(f"an outgoing message cannot move from {old} to {new}")
