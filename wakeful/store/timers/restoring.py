"""What both timer job stores share: jobs kept in memory, restored at start from what
was read before the scheduler started, and a writer that takes what is queued."""

from __future__ import annotations

import pickle
from typing import Any, TypeVar

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream
from apscheduler.job import Job
from apscheduler.jobstores.memory import MemoryJobStore

log = structlog.get_logger(__name__)

T = TypeVar("T")


def take_queued(receive: MemoryObjectReceiveStream[T]) -> list[T]:
    """What a job store's writer has queued already, without waiting (for one batch)."""
    taken: list[T] = []
    while True:
        try:
            taken.append(receive.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream):
            return taken


class RestoringJobStore(MemoryJobStore):  # type: ignore[misc]
    """A memory job store whose jobs were read (pickled) before the scheduler started:
    restored into it at start, for the SQLite and the Redis job stores alike."""

    def __init__(self) -> None:
        super().__init__()
        self._loaded: list[bytes] = []

    def start(self, scheduler: Any, alias: str) -> None:
        super().start(scheduler, alias)
        for state in self._loaded:
            job = self._restore(state)
            if job is not None:
                super().add_job(job)
        self._loaded = []

    def _restore(self, state: bytes) -> Job | None:
        try:
            job = Job.__new__(Job)
            job.__setstate__(pickle.loads(state))
        except Exception:
            # A job whose code moved cannot run; drop it rather than fail every start.
            log.exception("cannot restore a stored timer; skipping it")
            return None
        job._scheduler = self._scheduler
        job._jobstore_alias = self._alias
        return job
