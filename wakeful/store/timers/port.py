"""What the timers need of a job store, whichever backend keeps the jobs.

Both stores are APScheduler job stores (jobs in memory, changes written
behind in order) plus the record of fires in flight: ``SqliteJobStore``
(one daemon) and ``RedisJobStore`` (``[store] backend = "redis"``, where
several daemons share the jobs and ``claim_fire`` lets one of them fire a run).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True)
class PendingFire:
    """A run handed to the executor whose event may not be committed yet."""

    job_id: str
    run_time: datetime
    body: dict[str, Any]  # everything needed to build the event without the job


class TimerJobStore(Protocol):
    pending_fires: list[PendingFire]  # read at open: runs a stopped daemon left in flight

    async def open(self) -> None: ...

    async def run_writer(self) -> None:
        """Write queued changes until cancelled (in the timers' task group)."""
        ...

    async def drain(self) -> None: ...

    async def flush(self, *, durable: bool = False) -> None: ...

    def close(self) -> None: ...

    def record_fire(self, fire: PendingFire, *, replayed: bool = False) -> None:
        """Called synchronously as APScheduler hands the run over, before it advances the job."""
        ...

    async def claim_fire(self, fire: PendingFire) -> bool:
        """Whether this daemon fires the run (False: another daemon did, or the timer is gone)."""
        ...

    def fire_ended(self, fire: PendingFire, *, delivered: bool) -> None: ...
