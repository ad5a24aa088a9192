"""What an outgoing message is, as stored."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from wakeful.store.outbox.states import DeliveryState

# The local chat (the web page, `wakeful chat`, the HTTP API): the one channel whose
# messages a client acknowledges, so the only one the backends index as unread.
# Named here, below the core's targets (which route to it), because the backends need it.
LOCAL_CHAT = "chat:web"


@dataclass(frozen=True)
class NewMessage:
    """A message the agent wants sent; ``key`` makes adding it idempotent."""

    session: str
    channel: str  # the target, e.g. "chat:web"
    text: str
    key: str  # the same key always names the same message (a retried run or tool call)
    answers: str | None = None  # the id of the event it replies to, if any
    # Where on the channel: a chat platform's conversation (Telegram chat id, Slack
    # "channel/thread_ts", Matrix room id); None for channels with one destination.
    address: str | None = None
    # The approval this message is the owner's notice of, set only where the daemon
    # files one (never from the model's text or key): chat platforms put Approve/Deny
    # buttons under it. One optional id rather than a kind enum plus an id: the only
    # kind that carries meaning today is "notice of approval X", and a lone id cannot
    # say "a notice" without saying which.
    approval: str | None = None


@dataclass(frozen=True)
class OutgoingMessage:
    id: int  # increasing per outbox: clients acknowledge "up to" an id
    session: str
    channel: str
    text: str
    key: str
    state: DeliveryState
    attempts: int
    last_error: str
    created_at: float
    updated_at: float
    answers: str | None = None
    acked_at: float | None = None  # a client has shown it (chat channels)
    address: str | None = None
    approval: str | None = None  # see NewMessage.approval

    @property
    def unread(self) -> bool:
        return self.acked_at is None

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "state": self.state.value}


# The outbox key prefix of approval notices (``notice_key`` in wakeful/core/approvals).
OLD_NOTICE_KEY_PREFIX = "approval:"


def approval_of_old_record(key: str) -> str | None:
    """The approval a record stored before messages carried ``approval`` is the notice
    of, read from its key as that daemon did (notices to several channels carry
    ":<channel>" after the id). Only for such records — an SQLite row whose ``approval``
    column is NULL, a Redis hash with no ``approval`` field — so a notice left pending
    across the upgrade still gets its buttons. It can go once no outbox can hold an
    undelivered record from before the field (a release after the upgrade, once
    pending notices from then have been sent or timed out)."""
    if not key.startswith(OLD_NOTICE_KEY_PREFIX):
        return None
    return key[len(OLD_NOTICE_KEY_PREFIX) :].split(":", 1)[0] or None
