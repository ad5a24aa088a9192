"""Subscriptions as durable records in the store's channel state.

One key per subscription, ``subscriptions:<id>`` → JSON, written before the
tool answers (so an id the agent was given survives a crash) and after each
change of state. Nothing secret is kept: a webhook's token is stored as its
SHA-256 only.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from wakeful.daemon.store.base import ChannelState

KEY_PREFIX = "subscriptions:"
Kind = Literal["mailbox", "webhook", "file", "shell_output", "http_check"]
KINDS: tuple[Kind, ...] = ("mailbox", "webhook", "file", "shell_output", "http_check")
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
    """Every subscription, read once at start and kept in memory by its only writer."""

    def __init__(self, state: ChannelState) -> None:
        self._state = state
        self._items: dict[str, Subscription] = {}

    async def load(self) -> None:
        stored = await self._state.states_under(KEY_PREFIX)
        self._items = {
            key.removeprefix(KEY_PREFIX): Subscription.from_json(value)
            for key, value in stored.items()
        }

    def get(self, sub_id: str) -> Subscription | None:
        return self._items.get(sub_id)

    def all(self) -> list[Subscription]:
        return sorted(self._items.values(), key=lambda s: s.created_at)

    def active(self) -> list[Subscription]:
        return [s for s in self.all() if s.state == "active"]

    def of_session(self, session: str) -> list[Subscription]:
        return [s for s in self.all() if s.session == session]

    async def put(self, sub: Subscription) -> Subscription:
        await self._state.put_state(KEY_PREFIX + sub.id, sub.to_json())
        self._items[sub.id] = sub
        return sub

    async def change(self, sub_id: str, **changes: Any) -> Subscription | None:
        sub = self._items.get(sub_id)
        if sub is None:
            return None
        return await self.put(dataclasses.replace(sub, **changes))

    async def remove(self, sub_id: str) -> Subscription | None:
        sub = self._items.pop(sub_id, None)
        if sub is not None:
            await self._state.put_state(KEY_PREFIX + sub_id, None)
        return sub
