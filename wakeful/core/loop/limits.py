"""Per-run limits and counters, with messages that say which knob to turn."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoopLimits:
    max_model_calls_per_run: int = 40
    max_run_seconds: float = 1800.0
    max_consecutive_failures: int = 3
    parallel_max_model_calls: int = 3
    parallel_budget_s: float = 20.0
    failure_backoff_s: float = 1.0
    max_event_crashes: int = 3  # crashed runs an event may be in before it is quarantined
    restart_backoff_s: float = 0.5  # before a crashed session loop restarts; doubles
    max_restart_backoff_s: float = 30.0


@dataclass
class Run:
    """One stretch of work from waking up to going idle."""

    limits: LoopLimits
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started_at: float = field(default_factory=time.monotonic)
    model_calls: int = 0
    consecutive_failures: int = 0
    last_failure: str | None = None  # the failure watchers were last told of
    interrupts: int = 0
    refused: str | None = None  # the model refused our key: retrying cannot help
    context_full: str | None = None  # the request cannot be made to fit: the run stops
    context_retried: bool = False  # one retry after the provider said "too long"

    def exceeded(self) -> str | None:
        """Why the run must stop now, or None."""
        if self.refused is not None:
            return self.refused
        if self.context_full is not None:
            return self.context_full
        limits = self.limits
        if self.model_calls >= limits.max_model_calls_per_run:
            return (
                f"this run made {self.model_calls} model calls, the limit "
                f"([loop] max_model_calls_per_run = {limits.max_model_calls_per_run}); "
                "send a message to continue"
            )
        elapsed = time.monotonic() - self.started_at
        if elapsed >= limits.max_run_seconds:
            return (
                f"this run has lasted {elapsed:.0f} s, the limit "
                f"([loop] max_run_seconds = {limits.max_run_seconds:.0f}); "
                "send a message to continue"
            )
        if self.consecutive_failures >= limits.max_consecutive_failures:
            return (
                f"the model failed {self.consecutive_failures} times in a row "
                f"([loop] max_consecutive_failures = {limits.max_consecutive_failures}); "
                "the events are kept and the session resumes on the next event"
            )
        return None

    def backoff_s(self) -> float:
        return float(min(self.limits.failure_backoff_s * 2 ** (self.consecutive_failures - 1), 30))
