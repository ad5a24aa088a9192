"""A chat account's health as /api/status and /readyz show it, and the backoff between
failures: every platform's connection (Telegram, Signal, WhatsApp, Discord, XMPP, IRC)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from wakeful.channels.email.health import backoff_s

Publish = Callable[[bool, str], None]


@dataclass
class BotHealth:
    """What the bot is doing and, while failing, since when and why."""

    publish: Publish
    retry_min_s: float
    retry_max_s: float
    failures: int = 0
    failing_since: float | None = None

    def working(self, detail: str) -> None:
        self.failures = 0
        self.failing_since = None
        self.publish(True, detail)

    def failed(self, what: str, error: str) -> float:
        """Record a failure; the seconds to wait before trying again."""
        self.failures += 1
        if self.failing_since is None:
            self.failing_since = time.monotonic()
        since = time.monotonic() - self.failing_since
        self.publish(False, f"{what} failing for {since:.0f} s ({self.failures}x): {error}")
        return backoff_s(self.failures, self.retry_min_s, self.retry_max_s)
