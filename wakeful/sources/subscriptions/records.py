"""Subscriptions as durable records in the store's channel state.

One key per subscription, ``subscriptions:<id>`` → JSON, written before the
tool answers (so an id the agent was given survives a crash) and after each
change of state. Nothing secret is kept: a webhook's token is stored as its
SHA-256 only.

In a fleet every daemon keeps a copy of the records and more than one writes
them (the watching daemon its checks and counts, any daemon a disconnect), so
each change is a compare-and-set on the text last read
(:meth:`ChannelState.put_state_if`), re-read and re-applied when another daemon
wrote in between: no change overwrites another, and none brings back a record
another daemon removed.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from wakeful.store.base import ChannelState

KEY_PREFIX = "subscriptions:"
Kind = Literal["mailbox", "webhook", "file", "shell_output", "http_check"]
State = Literal["active", "ended"]


def new_subscription_id() -> str:
    return f"sub-{secrets.token_hex(5)}"


@dataclass(frozen=True)
class Subscription:
    id: str
    kind: Kind
    session: str
    # What the kind's module checked and keeps: its filter, target and private state.
    spec: dict[str, Any]
    note: str = ""
    created_at: float = field(default_factory=time.time)
    # The session's taint when it subscribed: the events speak with that trust.
    tainted_by: str | None = None
    state: State = "active"
    ended_reason: str = ""
    fired: int = 0
    last_fired_at: float | None = None
    # A line about the source as last seen (connected, last status, an error).
    detail: str = ""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Subscription:
        return cls(**json.loads(text))

    def public(self) -> dict[str, Any]:
        """What the agent, ``wakeful status`` and the web page are shown (no token hash)."""
        shown = {k: v for k, v in self.spec.items() if not k.startswith("_")}
        return {
            "subscription_id": self.id,
            "kind": self.kind,
            "session": self.session,
            "filter": shown,
            "note": self.note,
            "state": self.state,
            "ended_reason": self.ended_reason,
            "fired": self.fired,
            "last_fired_at": _iso(self.last_fired_at),
            "created_at": _iso(self.created_at),
            "detail": self.detail,
        }


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


class SubscriptionBook:
    """Every subscription, read at start (and when another daemon announces a change)
    and kept in memory with the text it was read as."""

    def __init__(self, state: ChannelState) -> None:
        self._state = state
        self._items: dict[str, Subscription] = {}
        self._texts: dict[str, str] = {}  # as last read or written: what a change expects

    async def load(self) -> None:
        stored = await self._state.states_under(KEY_PREFIX)
        self._texts = {key.removeprefix(KEY_PREFIX): value for key, value in stored.items()}
        self._items = {
            sub_id: Subscription.from_json(value) for sub_id, value in self._texts.items()
        }

    async def stored_ids(self) -> set[str]:
        """The ids in the store now (another daemon may have added or removed some)."""
        stored = await self._state.states_under(KEY_PREFIX)
        return {key.removeprefix(KEY_PREFIX) for key in stored}

    async def reread(self, sub_id: str) -> Subscription | None:
        """The record as the store holds it now, kept in memory (gone if it is gone)."""
        text = await self._state.get_state(KEY_PREFIX + sub_id)
        if text is None:
            self._items.pop(sub_id, None)
            self._texts.pop(sub_id, None)
            return None
        sub = Subscription.from_json(text)
        self._items[sub_id], self._texts[sub_id] = sub, text
        return sub

    def get(self, sub_id: str) -> Subscription | None:
        return self._items.get(sub_id)

    def all(self) -> list[Subscription]:
        return sorted(self._items.values(), key=lambda s: s.created_at)

    def active(self) -> list[Subscription]:
        return [s for s in self.all() if s.state == "active"]

    def of_session(self, session: str) -> list[Subscription]:
        return [s for s in self.all() if s.session == session]

    async def put(self, sub: Subscription) -> Subscription:
        """Store a new record (its id is fresh, so nobody else has written it)."""
        text = sub.to_json()
        if not await self._state.put_state_if(KEY_PREFIX + sub.id, None, text):
            raise RuntimeError(f"subscription id {sub.id} is taken")
        self._items[sub.id], self._texts[sub.id] = sub, text
        return sub

    async def change(self, sub_id: str, **changes: Any) -> Subscription | None:
        return await self.update(sub_id, lambda sub: dataclasses.replace(sub, **changes))

    async def update(
        self, sub_id: str, step: Callable[[Subscription], Subscription]
    ) -> Subscription | None:
        """``step`` applied to the record as stored, atomically: re-read and re-applied
        when another daemon wrote it meanwhile; None (nothing written) once it is gone."""
        while (sub := self._items.get(sub_id)) is not None:
            changed = step(sub)
            text = changed.to_json()
            expected = self._texts.get(sub_id)
            if await self._state.put_state_if(KEY_PREFIX + sub_id, expected, text):
                self._items[sub_id], self._texts[sub_id] = changed, text
                return changed
            await self.reread(sub_id)
        return None

    async def remove(self, sub_id: str) -> Subscription | None:
        sub = self._items.pop(sub_id, None)
        self._texts.pop(sub_id, None)
        if sub is not None:  # unconditional: a removal stands over any change made meanwhile
            await self._state.put_state(KEY_PREFIX + sub_id, None)
        return sub
