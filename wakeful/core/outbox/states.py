"""The one state machine of every outgoing message, as the store keeps it (see
:mod:`wakeful.store.outbox.states`); named where the core's outbox is."""

from __future__ import annotations

from wakeful.store.outbox.states import (
    ALLOWED_MOVES,
    CONFIRMED_AFTER_STOP,
    LEGACY_NAMES,
    RESENT_AFTER_STOP,
    STOPPED_MID_SEND,
    DeliveryState,
    IllegalMove,
    check_move,
)

__all__ = [
    "ALLOWED_MOVES",
    "CONFIRMED_AFTER_STOP",
    "LEGACY_NAMES",
    "RESENT_AFTER_STOP",
    "STOPPED_MID_SEND",
    "DeliveryState",
    "IllegalMove",
    "check_move",
]
