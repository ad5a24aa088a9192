"""``user.inactive``: the owner has been silent in a session for ``user_inactive_after``.

One deadline per session, reset by each of the owner's events as the feed
shows them (nothing is polled), fired once per silence. The time of the
owner's last event is kept in the channel state, so a silence that spans a
restart still ends in one ``user.inactive`` and never in two (its id is
``inactive:<session>:<last event ms>``, deduplicated by the store).
"""

from __future__ import annotations

import json
import time
from collections import deque
from datetime import UTC, datetime

import anyio
import structlog

from wakeful.core.feed import FeedItem
from wakeful.kernel.event_kinds import OWNER_KINDS, EventKind
from wakeful.kernel.events import Event
from wakeful.sources.system.alerts import Submit
from wakeful.sources.system.waiting import until_change_or
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

STATE_PREFIX = "system:user_seen:"


class InactivityWatch:
    def __init__(self, submit: Submit, state: ChannelState, after_s: float, after: str) -> None:
        self._submit = submit
        self._state = state
        self._after_s = after_s
        self._after = after  # as configured ("8h"), for the text
        self._last_seen: dict[str, float] = {}  # session → wall clock, not fired yet
        self._seen: deque[tuple[str, float]] = deque()
        self._changed = anyio.Event()
        self.fired = 0

    def on_feed(self, item: FeedItem) -> None:
        if item.get("type") == "event" and item.get("kind") in OWNER_KINDS:
            self._seen.append((str(item["session"]), float(item.get("at") or time.time())))
            self._changed.set()

    async def run(self) -> None:
        for key, raw in (await self._state.states_under(STATE_PREFIX)).items():
            record = json.loads(raw)
            if not record.get("fired"):
                self._last_seen[key.removeprefix(STATE_PREFIX)] = float(record["at"])
        while True:
            self._changed = anyio.Event()
            while self._seen:
                session, at = self._seen.popleft()
                self._last_seen[session] = at
                await self._state.put_state(STATE_PREFIX + session, json.dumps({"at": at}))
            await self._fire_due()
            due = [at + self._after_s for at in self._last_seen.values()]
            await until_change_or(self._changed, min(due) if due else None)

    async def _fire_due(self) -> None:
        now = time.time()
        for session, at in list(self._last_seen.items()):
            if at + self._after_s > now:
                continue
            await self._submit(self._event(session, at, now))
            del self._last_seen[session]
            self.fired += 1
            record = {"at": at, "fired": True}
            await self._state.put_state(STATE_PREFIX + session, json.dumps(record))

    def _event(self, session: str, at: float, now: float) -> Event:
        last = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return Event.parse(
            {
                "id": f"inactive:{session}:{int(at * 1000)}",
                "kind": EventKind.USER_INACTIVE,
                "source": {"type": "system", "principal": "wakeful", "trusted": True},
                "channel": "system",
                "content": {
                    "text": (
                        f"The user has not written in this session for {self._after} "
                        f"([system] user_inactive_after; last message at {last}). If "
                        "something is waiting for them, you may tell them through "
                        "another channel; otherwise nothing needs doing. This is said "
                        "once per silence."
                    ),
                    "data": {"last_user_event_at": at, "silent_s": round(now - at)},
                },
                "session": session,
            }
        )
