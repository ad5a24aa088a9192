"""The compaction breaker: a session whose compactions keep failing stops asking for them.

A compaction fails when its summary call fails (or is empty), when it does not
shrink the request, or when it shrinks it but not within the budget. Each such
compaction costs a model call the size of the history; without a breaker every
new event would pay it again. After ``[context] compaction_failures_to_trip``
failures in a row no summary is asked for that session until
``[context] compaction_cooldown_s`` have passed (then one try: a failure opens
it again at once) or the operator resets it (``wakeful context reset SESSION``).
The count lives in the session's :class:`ContextView`, in the store: it holds
across events, runs and restarts.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from wakeful.core.context.view import ContextView


@dataclass(frozen=True)
class CompactionBreaker:
    failures_to_trip: int
    cooldown_s: float
    clock: Callable[[], float] = time.time  # wall time: the opening is stored

    def remaining_s(self, view: ContextView) -> float | None:
        """Seconds until a compaction may be tried again; None when it may be now."""
        if view.breaker_opened_at is None:
            return None
        left = view.breaker_opened_at + self.cooldown_s - self.clock()
        return left if left > 0 else None

    def refusal(self, view: ContextView, session: str) -> str | None:
        """Why no compaction may be asked for now, naming the session; None if it may."""
        left = self.remaining_s(view)
        if left is None:
            return None
        return (
            f"compaction is paused after {view.failed_compactions} failed compactions in a row "
            f"(the compaction breaker is open); it is tried again in {left:.0f} s, or at once "
            f"after `wakeful context reset {session}`"
        )

    def failed(self, view: ContextView) -> ContextView:
        count = view.failed_compactions + 1
        opened = self.clock() if count >= self.failures_to_trip else None
        return dataclasses.replace(view, failed_compactions=count, breaker_opened_at=opened)

    def state(self, view: ContextView) -> str:
        """For the status: ``closed``, ``open`` (cooling down) or ``half-open`` (the next
        compaction is one try)."""
        if view.breaker_opened_at is None:
            return "closed"
        return "open" if self.remaining_s(view) is not None else "half-open"


def closed(view: ContextView) -> ContextView:
    """After a compaction that worked, or the operator's reset."""
    return dataclasses.replace(view, failed_compactions=0, breaker_opened_at=None)
