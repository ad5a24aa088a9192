"""A subagent's durable record: who its parent is, what it may do, where it stands.

Kept in the store's small-state table (``subagent:<id>``), written before the
child's first event is submitted, so after any crash the record says what the
child is and the events say how far it got.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from wakeful.store.base import ChannelState

KEY_PREFIX = "subagent:"
SESSION_PREFIX = "subagent:"


class State(StrEnum):
    RUNNING = "running"  # it has work: a task or message it has not answered yet
    IDLE = "idle"  # it answered (or its run stopped); a message starts it again
    CANCELLED = "cancelled"  # ended for good by its parent (or the parent's stop)
    EXHAUSTED = "exhausted"  # ended for good: its budget was used up

    @property
    def ended(self) -> bool:
        return self in (State.CANCELLED, State.EXHAUSTED)


@dataclass(frozen=True)
class Budget:
    model_calls: int
    tokens: int
    seconds: float


@dataclass
class SubagentRecord:
    subagent_id: str
    parent: str  # the parent's session
    depth: int  # 1: a child of a top-level session
    task: str
    tools: list[str]  # the only tools it may call
    budget: Budget
    created_at: float  # wall clock: its seconds budget counts from here, across restarts
    state: State = State.RUNNING
    tainted_by: str | None = None  # the parent's taint when it was spawned
    results: int = 0  # results delivered to the parent
    last_result: str | None = None
    reason: str | None = None  # why it ended
    updated_at: float = field(default=0.0)
    # Tools outside its scope it called by name anyway: refused, but its requests define
    # them from then on (a request must define every function its history calls).
    called_anyway: list[str] = field(default_factory=list)
    # The seq of its parent's newest event when it was spawned: a stop of the parent
    # stored after it ends this child, even if a crash came before the cancelling did.
    # 0: a record from before this was kept (its created_at is compared instead).
    parent_seq: int = 0

    @property
    def session(self) -> str:
        return session_of(self.subagent_id)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> SubagentRecord:
        data: dict[str, Any] = json.loads(raw)
        data["budget"] = Budget(**data["budget"])
        data["state"] = State(data["state"])
        return cls(**data)


def session_of(subagent_id: str) -> str:
    return f"{SESSION_PREFIX}{subagent_id}"


class RecordBook:
    """Every subagent record, in memory (task views read them synchronously) and in the store."""

    def __init__(self, state: ChannelState) -> None:
        self._state = state
        self._by_id: dict[str, SubagentRecord] = {}
        self._by_session: dict[str, SubagentRecord] = {}

    async def load(self) -> list[SubagentRecord]:
        for raw in (await self._state.states_under(KEY_PREFIX)).values():
            record = SubagentRecord.from_json(raw)
            self._remember(record)
        return list(self._by_id.values())

    async def save(self, record: SubagentRecord) -> None:
        await self._state.put_state(KEY_PREFIX + record.subagent_id, record.to_json())
        self._remember(record)

    def get(self, subagent_id: str) -> SubagentRecord | None:
        return self._by_id.get(subagent_id)

    def by_session(self, session: str) -> SubagentRecord | None:
        """The record of the child that ``session`` is; None for any other session."""
        return self._by_session.get(session)

    def children_of(self, parent: str) -> list[SubagentRecord]:
        return [r for r in self._by_id.values() if r.parent == parent]

    def all(self) -> list[SubagentRecord]:
        return list(self._by_id.values())

    def _remember(self, record: SubagentRecord) -> None:
        self._by_id[record.subagent_id] = record
        self._by_session[record.session] = record
