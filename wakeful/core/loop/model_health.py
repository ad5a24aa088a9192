"""How the model has been doing, across sessions, for `wakeful status`.

Fed by the session loop wherever it records a model call; read by the status.
Times are wall-clock (seconds since the epoch) so they mean something to a reader.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from wakeful.store.base import ModelCallRecord


@dataclass
class ModelHealth:
    last_success_at: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    failing_since: float | None = None  # first failure after the last success
    failures_in_a_row: int = 0
    key_refusals: int = 0
    # Known before any call (no key for a remote model): the state is not "ok" until a
    # call succeeds, so the status never says ok for a model that cannot answer.
    warning: str | None = None

    def record(self, record: ModelCallRecord, now: float | None = None) -> None:
        at = time.time() if now is None else now
        if record.outcome == "ok":
            self.last_success_at = at
            self.failing_since = None
            self.failures_in_a_row = 0
        elif record.outcome.startswith("error"):
            self.last_error = record.outcome.removeprefix("error: ")
            self.last_error_at = at
            self.failures_in_a_row += 1
            if self.failing_since is None:
                self.failing_since = at

    def key_refused(self) -> None:
        self.key_refusals += 1

    def describe(self) -> dict[str, Any]:
        """The status's ``model.health``: readable times, only what is known."""
        state = "failing" if self.failing_since is not None else "ok"
        if state == "ok" and self.warning is not None and self.last_success_at is None:
            state = "no key"
        health: dict[str, Any] = {"state": state, "last_success": _when(self.last_success_at)}
        if state == "no key":
            health["warning"] = self.warning
        if self.failing_since is not None:
            health["failing_since"] = _when(self.failing_since)
            health["failures_in_a_row"] = self.failures_in_a_row
        if self.last_error is not None:
            health["last_error"] = f"{_when(self.last_error_at)}: {self.last_error}"
        if self.key_refusals:
            health["key_refused"] = self.key_refusals
        return health


def _when(at: float | None) -> str:
    if at is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
