"""Whether the event store can take writes now: the one object /readyz reads.

The stores report into it from the one place each runs its calls: any
failure (disk full, I/O error, Redis down) marks it bad. Only the store's
``probe_write`` marks it good again — a write that needs fresh room, more
than a burst of events: on a nearly full disk small writes (an update in
place) still succeed while appends fail, and letting those count would make
the health flap. While it is bad, each ``/readyz`` and each restart of a
crashed session probe once, so it recovers by itself. Going bad and
recovering are logged once each per outage, not once per request.
"""

from __future__ import annotations

import time

import structlog

log = structlog.get_logger(__name__)


class StoreHealth:
    def __init__(self, name: str) -> None:
        self.name = name  # e.g. "SQLite file /var/lib/wakeful/wakeful.db"
        self.ok = True
        self.detail = ""
        self.failing_since: float | None = None
        self.outages = 0

    def failed(self, error: str) -> None:
        self.detail = error
        if not self.ok:
            return
        self.ok = False
        self.failing_since = time.time()
        self.outages += 1
        log.error(
            "the event store cannot write; refusing events (503) until it can",
            store=self.name,
            error=error,
        )

    def wrote(self) -> None:
        if self.ok:
            return
        down_s = time.time() - (self.failing_since or time.time())
        self.ok, self.detail, self.failing_since = True, "", None
        log.warning("the event store takes writes again", store=self.name, down_s=round(down_s))

    def describe(self) -> str:
        """One line for /readyz and status: what is wrong, or that all is well."""
        if self.ok:
            return f"{self.name}: ok"
        return f"the event store ({self.name}) cannot write: {self.detail}"
