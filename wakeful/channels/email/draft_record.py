"""What a draft is, as the email state keeps it (either backend).

A draft is not an outgoing message: ``send_email`` hands it to the shared
outbox (``wakeful.core.outbox``), which alone records whether it went out.
Drafts an older version sent through its own e-mail outbox still carry that
outcome (``legacy_state``); such a draft is reported from it, never handed over.
"""

from __future__ import annotations

from dataclasses import dataclass

from wakeful.store.outbox.states import DeliveryState

# What a draft row's state column holds when the draft was never handed over by an
# older version: "" (written now), "pending" and "prepared" (written before).
NOT_HANDED_OVER = frozenset({"", "pending", "prepared"})


@dataclass(frozen=True)
class Draft:
    message_id: str
    draft_id: str
    account: str
    recipients: list[str]
    raw: bytes  # the RFC 5322 message, 7-bit clean: exactly what goes out
    # Set only on drafts an older version sent itself: sent, sending or unknown.
    legacy_state: DeliveryState | None = None
    legacy_detail: str = ""

    @property
    def stored_state(self) -> str:
        return "" if self.legacy_state is None else self.legacy_state.value


def legacy_state(stored: str) -> DeliveryState | None:
    """The outcome an older version recorded in a draft row, if it handed it over."""
    return None if stored in NOT_HANDED_OVER else DeliveryState.parse(stored)
