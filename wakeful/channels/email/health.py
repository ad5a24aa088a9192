"""Per-mailbox health: what /api/status shows, and when an outage becomes an alert."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event


def backoff_s(attempt: int, low: float, high: float) -> float:
    """Exponential backoff with "equal jitter": half fixed, half random."""
    ceiling = min(high, low * 2 ** max(0, attempt - 1))
    return float(ceiling / 2 + random.uniform(0, ceiling / 2))


@dataclass
class MailboxHealth:
    account: str
    mailbox: str
    session: str
    alert_after_s: float
    state: str = "starting"  # starting | standby | idle | polling | syncing | failing | auth_failed
    failing_since: float | None = None  # wall clock
    last_error: str = ""
    delivered: int = 0
    skipped: int = 0
    reconnects: int = 0
    alerted: bool = False
    # The self-check (watcher.py): times UIDNEXT moved while IDLE announced nothing.
    resyncs: int = 0
    last_resync: float | None = None  # wall clock
    last_resync_reason: str = ""

    @property
    def key(self) -> str:
        return f"email:{self.account}:{self.mailbox}"

    @property
    def ok(self) -> bool:
        return self.state not in ("failing", "auth_failed")

    def working(self, state: str) -> None:
        self.state = state
        self.failing_since = None
        self.alerted = False

    def resynced(self, uidnext_before: int, uidnext_now: int) -> None:
        self.resyncs += 1
        self.last_resync = time.time()
        self.last_resync_reason = (
            f"UIDNEXT moved from {uidnext_before} to {uidnext_now} without an IDLE event"
        )

    def failed(self, error: str, *, auth: bool) -> Event | None:
        """Record a failure; returns the alert to send once the outage is long enough."""
        now = time.time()
        self.state = "auth_failed" if auth else "failing"
        self.last_error = error
        self.reconnects += 1
        if self.failing_since is None:
            self.failing_since = now
        if self.alerted or now - self.failing_since < self.alert_after_s:
            return None
        self.alerted = True
        return self._alert(now - self.failing_since)

    def _alert(self, for_s: float) -> Event:
        what = "rejecting the login" if self.state == "auth_failed" else "unreachable"
        fix = (
            "check the account's username and password_file"
            if self.state == "auth_failed"
            else "check the server and the network; wakeful keeps retrying with backoff"
        )
        return Event.parse(
            {
                "id": f"alert:imap:{self.account}:{self.mailbox}:{int(self.failing_since or 0)}",
                "kind": EventKind.SYSTEM_ALERT,
                "source": {"type": "system", "principal": "email", "trusted": True},
                "channel": "system",
                "content": {
                    "text": (
                        f"Mailbox {self.mailbox} of email account {self.account} has been "
                        f"{what} for {for_s:.0f} s (last error: {self.last_error}); new mail "
                        f"there is not being seen. To fix: {fix}."
                    ),
                    "data": self.describe(),
                },
                "context": {"priority": "high"},
                "session": self.session,
            }
        )

    def detail(self) -> str:
        if self.ok:
            detail = f"{self.state}; {self.delivered} messages delivered"
            if self.last_resync is not None:
                when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.last_resync))
                detail += (
                    f"; resynced {self.resyncs} time(s), last at {when}: {self.last_resync_reason}"
                )
            return detail
        since = time.time() - (self.failing_since or time.time())
        return f"{self.state} for {since:.0f} s: {self.last_error}"

    def describe(self) -> dict[str, Any]:
        return {
            "account": self.account,
            "mailbox": self.mailbox,
            "state": self.state,
            "ok": self.ok,
            "failing_since": self.failing_since,
            "last_error": self.last_error,
            "delivered": self.delivered,
            "skipped": self.skipped,
            "reconnects": self.reconnects,
            "resyncs": self.resyncs,
            "last_resync": self.last_resync,
            "last_resync_reason": self.last_resync_reason,
        }
