"""What an outgoing message is, as stored."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from wakeful.core.outbox.states import DeliveryState


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

    @property
    def unread(self) -> bool:
        return self.acked_at is None

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "state": self.state.value}
