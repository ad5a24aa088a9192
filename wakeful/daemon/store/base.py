"""The event store and trajectory store interface.

One invariant lives here: an accepted event is either still waiting in its
session's queue or appended to that session's trajectory, never both and
never neither. ``consume`` is the only way an event leaves the queue, and it
appends the event's messages in the same transaction.

The SQLite backend is the embedded default; the Redis backend
(``redis_store.py``) implements the same protocol without changes to the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from wakeful.events import Event

Message = dict[str, Any]


class EventStatus(StrEnum):
    ROUTING = "routing"  # stored, waiting for the router's decision; not yet takeable
    PENDING = "pending"  # waiting for the session's next safe point
    PARALLEL = "parallel"  # held while a side session answers it
    CONSUMED = "consumed"  # appended to the trajectory


class StoreUnavailable(Exception):
    """The store cannot take writes now; callers answer 503 and the sender retries."""


class ConsumeConflict(Exception):
    """Some events were no longer pending; nothing was written."""


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    event: Event
    status: EventStatus
    strategy: str | None = None
    reason: str | None = None
    parallel_answer: str | None = None
    accepted_at: float = 0.0

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> StoredEvent:
        """From (seq, event JSON, status, strategy, reason, parallel_answer, accepted_at),
        the order both backends read them in; numbers may come as text (Redis)."""
        seq, body, status, strategy, reason, answer, accepted_at = row
        return cls(
            seq=int(seq),
            event=Event.model_validate_json(body),
            status=EventStatus(status),
            strategy=strategy,
            reason=reason,
            parallel_answer=answer,
            accepted_at=float(accepted_at),
        )


@dataclass(frozen=True)
class AppendResult:
    stored: StoredEvent
    created: bool  # False: the id was seen before; nothing was added


@dataclass(frozen=True)
class ModelCallRecord:
    session: str
    run_id: str
    model: str
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    finish_reason: str | None
    outcome: str  # "ok" | "interrupted" | "error: ..."


@dataclass(frozen=True)
class QueueDepth:
    session: str
    pending: int
    oldest_accepted_at: float | None


class Store(Protocol):
    async def append(
        self,
        event: Event,
        status: EventStatus = EventStatus.PENDING,
        strategy: str | None = None,
        reason: str | None = None,
    ) -> AppendResult:
        """Store the event unless its id was seen before (then add nothing)."""
        ...

    async def set_route(
        self, event_id: str, status: EventStatus, strategy: str, reason: str
    ) -> None: ...

    async def set_parallel_answer(self, event_id: str, answer: str) -> None:
        """Store the side session's answer and put the event back in the queue."""
        ...

    async def pending(self, session: str) -> list[StoredEvent]: ...

    async def consume(
        self,
        session: str,
        event_ids: list[str],
        messages: list[Message],
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Mark the events consumed and append their messages, atomically."""
        ...

    async def append_messages(
        self, session: str, messages: list[Message], meta: dict[str, Any] | None = None
    ) -> None: ...

    async def trajectory(self, session: str) -> list[Message]: ...

    async def sessions(self) -> list[str]:
        """Every session with events or messages."""
        ...

    async def recover(self) -> int:
        """After a restart: events held mid-routing or mid-parallel go back to pending."""
        ...

    async def event_log(
        self, session: str | None, after_seq: int = 0, limit: int = 200
    ) -> list[StoredEvent]: ...

    async def queue_depths(self) -> list[QueueDepth]: ...

    async def record_model_call(self, record: ModelCallRecord) -> None: ...

    async def model_calls(self, session: str, limit: int = 100) -> list[ModelCallRecord]: ...

    async def aclose(self) -> None: ...
