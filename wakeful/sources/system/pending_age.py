"""The oldest event waiting in a session's queue: armed as one timer, never polled.

The queue is read when the earliest possible deadline (the oldest pending
event's time + ``pending_age_max_s``) passes, and when the feed shows a change
that could matter: an event arriving while nothing is armed, or anything
happening in the sessions while an alert is open (that is how it ends). New
events cannot make the oldest one older, so an armed deadline stays right; an
event consumed before it only makes the timer fire early, to re-arm.
"""

from __future__ import annotations

import time

import anyio

from wakeful.core.feed import FeedItem
from wakeful.core.provider import HOW_TO_CONFIGURE
from wakeful.sources.system.alerts import AlertBook
from wakeful.sources.system.waiting import until_change_or
from wakeful.store.base import EventQueue, QueueDepth

PREFIX = "pending_age:"
CHANGES = frozenset({"event", "run", "tool"})  # feed items that may move a queue
MIN_REREAD_S = 1.0  # a burst of changes reads the queue at most once a second


class PendingAgeWatch:
    def __init__(
        self, store: EventQueue, book: AlertBook, max_age_s: float, *, model: bool = True
    ) -> None:
        self._store = store
        self._book = book
        self._max_age_s = max_age_s
        self._model = model  # False: no model is configured, which is why events wait
        self._changed = anyio.Event()
        self._armed: float | None = None
        self.reads = 0

    def on_feed(self, item: FeedItem) -> None:
        if item.get("type") not in CHANGES:
            return
        if self._armed is None or any(c.startswith(PREFIX) for c in self._book.active):
            self._changed.set()

    async def run(self) -> None:
        first = True
        while True:
            self._changed = anyio.Event()  # before the read: a change during it reads again
            self._armed = await self.check()
            if first:
                first = False
                await self._book.settle_unseen(PREFIX, "no event waits that long any more")
            await until_change_or(self._changed, self._armed)
            await anyio.sleep(MIN_REREAD_S if self._changed.is_set() else 0)

    async def check(self) -> float | None:
        """Raise or resolve each session's condition; the next deadline, if any."""
        self.reads += 1
        depths = await self._store.queue_depths()
        now = time.time()
        deadline: float | None = None
        waiting = set()
        for depth in depths:
            if not depth.pending or depth.oldest_accepted_at is None:
                continue
            waiting.add(PREFIX + depth.session)
            due = depth.oldest_accepted_at + self._max_age_s
            if due <= now:
                await self._raise(depth, now)
            else:
                await self._resolve(PREFIX + depth.session)
                deadline = due if deadline is None else min(deadline, due)
        for condition in [c for c in self._book.active if c.startswith(PREFIX)]:
            if condition not in waiting:
                await self._resolve(condition)
        return deadline

    async def _raise(self, depth: QueueDepth, now: float) -> None:
        age = now - (depth.oldest_accepted_at or now)
        await self._book.raise_(
            PREFIX + depth.session,
            f"Session {depth.session!r} has {depth.pending} events waiting; the oldest has "
            f"waited {age:.0f} s, over [system] pending_age_max_s = {self._max_age_s:g}. "
            + self._cause(depth.session),
            session=depth.session,
            pending=depth.pending,
            oldest_age_s=round(age, 1),
        )

    def _cause(self, session: str) -> str:
        if not self._model:
            return f"They wait: {HOW_TO_CONFIGURE}."
        return (
            "Its loop is busy with a long run or cannot call the model. To fix: see `wakeful "
            f"status` (its run and tasks); cancel or interrupt what holds session {session!r} "
            "if it is stuck."
        )

    async def _resolve(self, condition: str) -> None:
        session = condition.removeprefix(PREFIX)
        await self._book.resolve(
            condition, f"Session {session!r} is taking its events again; none waits too long."
        )
