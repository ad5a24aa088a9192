"""How many of the waiting events one safe point presents: the oldest that fit.

A flood (hundreds of webhooks queued while one reply streams) can hold more
than the context budget. Taken whole, it would force a compaction in the very
request meant to show it, and the summary would stand in for events no agent
request ever carried. So a safe point takes the oldest events that fit in a
share of the budget (always at least one); the rest stay queued for the next
safe point, and the batch's ``[Unprocessed event i/N]`` markers count all that
wait, so the model knows more follow.
"""

from __future__ import annotations

from collections.abc import Callable

from wakeful.core.context.session_context import SUMMARY_ALLOWANCE
from wakeful.store.base import StoredEvent

# Of the budget, what one batch's events may take: the rest holds the fixed part,
# a summary and the tail a compaction keeps, so the request fits once compacted.
BATCH_SHARE = 0.5


def event_room(budget: int, fixed_tokens: int) -> int:
    """Tokens the events of one batch may take in a request."""
    return int(budget * BATCH_SHARE) - fixed_tokens - SUMMARY_ALLOWANCE


def oldest_that_fit(
    waiting: list[StoredEvent], room: int, cost: Callable[[StoredEvent], int]
) -> list[StoredEvent]:
    """The oldest of ``waiting`` whose ``cost`` adds up to at most ``room``; at least
    the oldest one, whatever its size (pruning or the context's refusal handle it)."""
    taken: list[StoredEvent] = []
    used = 0
    for stored in waiting:
        used += cost(stored)
        if taken and used > room:
            break
        taken.append(stored)
    return taken
