"""The store's ports: the event queue, the trajectory, the model-call log.

One invariant lives here: an accepted event is either still waiting in its
session's queue, appended to that session's trajectory, or quarantined (it
crashed its session too often), never two and never none. ``consume`` is the
only way an event leaves the queue into the trajectory, and it appends the
event's messages in the same transaction.

A second one: a platform's cursor (Telegram update offset, Matrix sync token)
is committed in the same transaction as the event it produced (``append``'s
``cursor``), so a restart neither answers a message again nor skips one.

Callers depend on the narrowest port they use (:class:`EventQueue`,
:class:`TrajectoryStore`, :class:`ModelCallLog`, :class:`ChannelState`);
:class:`Store` is their union, which both backends implement: SQLite
(``sqlite.py``, the embedded default) and Redis (``redis_store.py``). Each also
hands out the backends of the rest of the durable state (:class:`StateBackends`:
the outbox, the timers' jobs, the fleet's leases and notices).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from wakeful.kernel.events import Event
from wakeful.store.health import StoreHealth
from wakeful.store.state.port import StatePort

if TYPE_CHECKING:  # each backend module is imported only by the store that uses it
    from wakeful.store.fleet.port import Coordination
    from wakeful.store.outbox.port import OutgoingMessages
    from wakeful.store.timers.port import TimerJobStore

Message = dict[str, Any]


class EventStatus(StrEnum):
    ROUTING = "routing"  # stored, waiting for the router's decision; not yet takeable
    PENDING = "pending"  # waiting for the session's next safe point
    PARALLEL = "parallel"  # held while a side session answers it
    CONSUMED = "consumed"  # appended to the trajectory
    QUARANTINED = "quarantined"  # crashed its session too often; waits for `events retry`


class StoreUnavailable(Exception):
    """The store cannot take writes now; callers answer 503 and the sender retries."""


class StoreCorrupt(StoreUnavailable):
    """The store's data failed its integrity check at open; the message says how to recover."""


class SessionLeaseLost(Exception):
    """A trajectory write was refused by the fencing check: another daemon owns the
    session now (fleet only). The session's loop ends here; nothing was written."""


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
    attempts: int = 0  # runs that took this event, counted before each one starts
    failure: str | None = None  # why it was quarantined

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> StoredEvent:
        """From (seq, event JSON, status, strategy, reason, parallel_answer, accepted_at,
        attempts, failure), the order both backends read them in; numbers may come as
        text and absent fields as None (Redis)."""
        seq, body, status, strategy, reason, answer, accepted_at, attempts, failure = row
        return cls(
            seq=int(seq),
            event=Event.model_validate_json(body),
            status=EventStatus(status),
            strategy=strategy,
            reason=reason,
            parallel_answer=answer,
            accepted_at=float(accepted_at),
            attempts=int(attempts or 0),
            failure=failure,
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
    source: str = ""  # the source type of the event the run answered (user, webhook, …)
    created_at: float = 0.0  # when it was recorded (epoch seconds; 0: by the store)


@dataclass(frozen=True)
class EventLogPage:
    """The newest events below a seq, in seq order, and how many older ones match."""

    events: list[StoredEvent]
    older: int


@dataclass(frozen=True)
class Cursor:
    """Where a channel has read up to, stored under ``key`` in :class:`ChannelState`."""

    key: str
    value: str


@dataclass(frozen=True)
class QueueDepth:
    session: str
    pending: int
    oldest_accepted_at: float | None


class EventQueue(Protocol):
    """Where accepted events wait: deduplicated, routed, taken at safe points."""

    async def append(
        self,
        event: Event,
        status: EventStatus = EventStatus.PENDING,
        strategy: str | None = None,
        reason: str | None = None,
        cursor: Cursor | None = None,
    ) -> AppendResult:
        """Store the event unless its id was seen before (then add nothing).

        ``cursor`` is written in the same transaction, duplicate or not."""
        ...

    async def set_route(
        self, event_id: str, status: EventStatus, strategy: str, reason: str
    ) -> None: ...

    async def set_parallel_answer(self, event_id: str, answer: str) -> None:
        """Store the side session's answer and put the event back in the queue."""
        ...

    async def pending(self, session: str) -> list[StoredEvent]: ...

    async def recover(self) -> int:
        """After a restart: events held mid-routing or mid-parallel go back to pending."""
        ...

    async def event_log(
        self, session: str | None, after_seq: int = 0, limit: int = 200
    ) -> list[StoredEvent]: ...

    async def event_log_newest(
        self, session: str | None, before_seq: int = 0, limit: int = 50
    ) -> EventLogPage:
        """The newest ``limit`` events with seq below ``before_seq`` (0: no bound)."""
        ...

    async def queue_depths(self) -> list[QueueDepth]: ...

    async def sessions(self) -> list[str]:
        """Every session with events or messages."""
        ...

    async def note_attempt(self, event_ids: list[str], delta: int = 1) -> dict[str, int]:
        """Count one more run of these events *before* it starts (so a crash that
        takes the process down still counts); the attempts before this one, by id.
        ``delta=-1`` takes a count back (the run failed because the store did)."""
        ...

    async def quarantine(self, event_ids: list[str], failure: str) -> list[str]:
        """Move pending or consumed events out of the way with the reason; the ids moved."""
        ...

    async def retry(self, event_id: str) -> StoredEvent | None:
        """A quarantined event back to pending with its count reset; None if it was not
        quarantined (unknown id, or not in quarantine)."""
        ...

    async def quarantined(self) -> list[StoredEvent]: ...


class TrajectoryStore(Protocol):
    """A session's trajectory: the messages the model sees, append-only.

    ``fencing``: the token of the session's lease the writer holds. The Redis
    store of a fleet checks it in the write's own script and refuses a write
    whose token is not the session's current one (:class:`SessionLeaseLost`);
    with ``None`` it uses the token this daemon holds (callers pass none). The
    SQLite store and a single Redis daemon have one writer and ignore it.
    """

    async def consume(
        self,
        session: str,
        event_ids: list[str],
        messages: list[Message],
        meta: dict[str, Any] | None = None,
        fencing: int | None = None,
    ) -> None:
        """Mark the events consumed and append their messages, atomically."""
        ...

    async def append_messages(
        self,
        session: str,
        messages: list[Message],
        meta: dict[str, Any] | None = None,
        fencing: int | None = None,
    ) -> None: ...

    async def trajectory(self, session: str) -> list[Message]: ...


class ModelCallLog(Protocol):
    async def record_model_call(self, record: ModelCallRecord) -> None: ...

    async def model_calls(self, session: str, limit: int = 100) -> list[ModelCallRecord]: ...


class ChannelState(Protocol):
    """Small values channels keep across restarts: cursors, pairing records, presence.

    Keys are namespaced by their owner (``telegram:tg:offset``); values are short
    strings (JSON where structured), never secrets."""

    async def get_state(self, key: str) -> str | None: ...

    async def put_state(self, key: str, value: str | None) -> None:
        """Set ``key`` (``None`` deletes it)."""
        ...

    async def states_under(self, prefix: str) -> dict[str, str]:
        """Every key starting with ``prefix`` and its value (for short listings)."""
        ...

    async def put_state_if(self, key: str, expected: str | None, value: str | None) -> bool:
        """Set ``key`` to ``value`` (``None`` deletes it) only if it now holds ``expected``
        (``None``: absent), atomically; False, and nothing written, if it does not. For
        records several daemons of a fleet change: the first writer wins, no write is lost."""
        ...


class StateBackends(Protocol):
    """The rest of the daemon's durable state, kept where the events are: each store
    hands out its own backend of it, so no component picks one or opens Redis."""

    def state(self) -> StatePort:
        """Records and named leases for components (``wakeful/store/state/``), on this
        store's backend: the component never chooses one."""
        ...

    async def outbox_messages(self) -> OutgoingMessages:
        """The outbox (``wakeful/store/outbox/``), opened on this store's connection."""
        ...

    def timer_jobs(self) -> AbstractAsyncContextManager[TimerJobStore]:
        """The timers' job store (``wakeful/store/timers/``), opened: its jobs and fires
        in flight are read. What it holds open ends with the block; drain and close the
        job store before then."""
        ...

    def coordination(self, name: str) -> AbstractAsyncContextManager[Coordination | None]:
        """Named leases, change notices and rosters (``wakeful/store/fleet/port.py``) for
        the component ``name``, which splits work with the other daemons sharing this
        store; None where no other daemon can share it (SQLite: one daemon per file)."""
        ...


class Store(EventQueue, TrajectoryStore, ModelCallLog, ChannelState, StateBackends, Protocol):
    """Every port, as both backends implement them, plus health and closing."""

    @property
    def health(self) -> StoreHealth: ...

    async def probe_write(self) -> None:
        """One throwaway write that needs fresh space; raises StoreUnavailable if it fails."""
        ...

    async def aclose(self) -> None: ...
