"""The one place system alerts are raised, deduplicated and resolved.

A *condition* (``disk``, ``memory``, ``pending_age:main``, ``component:email``)
is either quiet or in an *episode*. Raising a quiet condition starts an episode
with its own id (``alert:system:<condition>:<start ms>``) and sends one
``system.alert`` with ``state: "active"``; raising it again while the episode
lasts sends nothing. Resolving it sends the same id with ``:resolved`` and
``state: "resolved"``. Ids are deterministic, so the store's deduplication
makes a repeat after a crash harmless.

Episodes are kept in the channel state, so one that began before a restart is
resolved after it when its condition is gone (:meth:`AlertBook.settle_unseen`)
instead of staying open for ever.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import structlog

from wakeful.core.heartbeat_checks import Finding
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event, Priority
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

STATE_PREFIX = "system:alert:"
Submit = Callable[[Event], Awaitable[object]]
AlertState = Literal["active", "resolved"]


@dataclass
class Episode:
    condition: str
    started_at: float
    text: str
    priority: Priority
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def alert_id(self) -> str:
        return f"alert:system:{self.condition}:{int(self.started_at * 1000)}"

    def line(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.started_at))
        return f"{self.condition}: since {since} UTC: {self.text}"


class AlertBook:
    """Active episodes by condition; every system.alert of the package goes through here."""

    def __init__(self, submit: Submit, state: ChannelState, session: str) -> None:
        self._submit = submit
        self._state = state
        self._session = session
        self.active: dict[str, Episode] = {}
        self.raised_since_start: set[str] = set()
        self.resolved_count = 0
        # Episodes whose alert this process has sent (or seen sent). One loaded from
        # before a restart is sent once more when raised: a crash may have come between
        # recording it and sending it, and the store drops the copy if it had arrived.
        self._sent: set[str] = set()

    async def load(self) -> None:
        """Episodes open when the daemon last stopped."""
        for key, raw in (await self._state.states_under(STATE_PREFIX)).items():
            try:
                episode = Episode(**json.loads(raw))
            except (TypeError, ValueError):
                log.warning("unreadable system alert record dropped", key=key)
                await self._state.put_state(key, None)
                continue
            self.active[episode.condition] = episode

    async def raise_(
        self, condition: str, text: str, *, priority: Priority = "high", **data: Any
    ) -> bool:
        """Start an episode unless one is open; True when an alert was sent."""
        self.raised_since_start.add(condition)
        if condition in self.active:
            episode = self.active[condition]
            if condition not in self._sent:
                await self._send(episode, "active", episode.text, episode.priority)
                self._sent.add(condition)
            return False
        episode = Episode(condition, time.time(), text, priority, data)
        # Recorded before it is sent: a crash between the two resends the same id.
        await self._state.put_state(STATE_PREFIX + condition, json.dumps(asdict(episode)))
        self.active[condition] = episode
        try:
            await self._send(episode, "active", text, priority)
        except Exception:  # store down or stopping: the next check raises it afresh
            del self.active[condition]
            await self._state.put_state(STATE_PREFIX + condition, None)
            raise
        self._sent.add(condition)
        log.warning("system alert", condition=condition, alert_id=episode.alert_id)
        return True

    async def resolve(self, condition: str, text: str) -> bool:
        """End the open episode of ``condition``, if any; True when an alert was sent."""
        self.raised_since_start.discard(condition)
        episode = self.active.get(condition)
        if episode is None:
            return False
        await self._send(episode, "resolved", text, "normal")
        await self._state.put_state(STATE_PREFIX + condition, None)
        del self.active[condition]
        self._sent.discard(condition)
        self.resolved_count += 1
        log.info("system alert resolved", condition=condition, alert_id=episode.alert_id)
        return True

    async def settle_unseen(self, prefix: str, why: str) -> None:
        """Resolve episodes under ``prefix`` left from before a restart and not raised since."""
        for condition in [c for c in self.active if c.startswith(prefix)]:
            if condition not in self.raised_since_start:
                await self.resolve(condition, why)

    def is_active(self, condition: str) -> bool:
        return condition in self.active

    async def open_alerts(self) -> list[Finding]:
        """The heartbeat's check: each episode still active, said once (by its id).
        The condition and the start only: the alert's own text went out with it."""
        return [
            Finding(
                e.alert_id,
                f"system alert {e.alert_id} ({e.condition}, {e.priority}) is still "
                f"active since {datetime.fromtimestamp(e.started_at, UTC):%Y-%m-%d %H:%M} UTC",
            )
            for e in sorted(self.active.values(), key=lambda e: e.started_at)
        ]

    def status(self) -> dict[str, Any]:
        episodes = sorted(self.active.values(), key=lambda e: e.started_at)
        return {
            "active_alerts": len(self.active),
            "resolved_alerts": self.resolved_count,
            "alerts": [e.line() for e in episodes],
            # The same, as fields (the web page's banner lays them out itself).
            "open": [
                {
                    "alert_id": e.alert_id,
                    "condition": e.condition,
                    "since": datetime.fromtimestamp(e.started_at, UTC).isoformat(),
                    "priority": e.priority,
                    "text": e.text,
                }
                for e in episodes
            ],
        }

    async def _send(
        self, episode: Episode, state: AlertState, text: str, priority: Priority
    ) -> None:
        suffix = "" if state == "active" else ":resolved"
        prefix = "" if state == "active" else "Resolved: "
        event = Event.parse(
            {
                "id": episode.alert_id + suffix,
                "kind": EventKind.SYSTEM_ALERT,
                "source": {"type": "system", "principal": "wakeful", "trusted": True},
                "channel": "system",
                "content": {
                    "text": prefix + text,
                    "data": {
                        "condition": episode.condition,
                        "state": state,
                        "alert_id": episode.alert_id,
                        "started_at": episode.started_at,
                        **episode.data,
                    },
                },
                "context": {"priority": priority},
                "session": self._session,
            }
        )
        await self._submit(event)
