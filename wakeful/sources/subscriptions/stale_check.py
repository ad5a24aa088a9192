"""The heartbeat's stale-subscriptions check, from the records alone (no I/O):

- an active subscription whose watch is failing (its detail says ``failing:``, set
  while the watch backs off before a retry);
- an active ``http_check`` not checked for longer than ``STALE_INTERVALS`` of its
  intervals (its last check time is kept in the record), or never checked that long
  after it was made.

A finding names the subscription, its kind, session and state — never the error's
text, which may quote the source (list_channels shows it, labelled).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from wakeful.core.heartbeat_checks import Finding
from wakeful.sources.subscriptions.records import Subscription, SubscriptionBook

STALE_INTERVALS = 3  # missed checks before an http_check counts as stale


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _name(sub: Subscription) -> str:
    return f"subscription {sub.id} ({sub.kind}, session {sub.session!r})"


def stale(sub: Subscription, now: float) -> Finding | None:
    if sub.state != "active":
        return None
    if sub.detail.startswith("failing:"):
        return Finding(
            f"subscription-failing:{sub.id}",
            f"{_name(sub)} is failing and retrying (list_channels has its detail)",
        )
    if sub.kind != "http_check":
        return None
    interval = float(sub.spec.get("interval_s") or 0)
    checked = sub.spec.get("_checked_at")
    last = float(checked) if checked is not None else sub.created_at
    if interval <= 0 or now - last <= STALE_INTERVALS * interval:
        return None
    since = f"since {_when(last)}" if checked is not None else f"since it was made at {_when(last)}"
    return Finding(
        f"subscription-stale:{sub.id}:{last:.0f}",
        f"{_name(sub)} has not been checked {since} (every {interval:g} s)",
    )


class StaleSubscriptionsCheck:
    def __init__(self, book: SubscriptionBook, clock: Callable[[], float] = time.time) -> None:
        self._book = book
        self._clock = clock

    async def __call__(self) -> list[Finding]:
        now = self._clock()
        return [f for sub in self._book.active() if (f := stale(sub, now)) is not None]
