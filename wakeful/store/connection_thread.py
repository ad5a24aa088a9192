"""The SQLite connection's own thread: calls run there in order, appends in groups.

Before, each store call went through ``anyio.to_thread.run_sync``: per call
the event loop paid three checkpoints, a capacity limiter, two cancel
scopes, a context copy and a ``queue.Queue`` handshake whose futex wake-up
of the sleeping worker alone was an eighth of the loop's CPU under webhook
load; and each group commit was handed over only after the previous one
had come back to the loop. Here one thread owns the connection. The loop
puts a job on a ``SimpleQueue`` and awaits an asyncio future; the thread
answers a whole batch with one ``call_soon_threadsafe``. Appends that queue
while a commit runs are taken by the thread straight after it, as one
transaction (group commit), without a round trip through the loop between
the two commits. Jobs run in the order they were queued: an append never
overtakes a call queued before it, nor the other way round.

Like ``to_thread.run_sync``, a caller waits for its job even when cancelled
(the wait is shielded): a cancelled caller does not leave while its write is
still running, and a queued append is committed whatever its caller does.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from queue import Empty, SimpleQueue
from typing import Any, Generic, TypeVar

import anyio

T = TypeVar("T")
ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


@dataclass(slots=True)
class _Call:
    fn: Callable[[], Any]
    future: asyncio.Future[Any]


@dataclass(slots=True)
class _Append:
    item: Any
    future: asyncio.Future[Any]


_STOP = object()
Outcome = tuple[asyncio.Future[Any], Any, BaseException | None]


class ConnectionThread(Generic[ItemT, ResultT]):
    """``commit`` runs in the thread: one result per item, in order, or it raises
    (every item of the batch then raises the same)."""

    def __init__(self, name: str, commit: Callable[[list[ItemT]], Sequence[ResultT]]) -> None:
        self._commit = commit
        self._jobs: SimpleQueue[_Call | _Append | object] = SimpleQueue()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    async def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` in the thread, after every job queued before it."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put(_Call(fn, future))
        return await _wait(future)

    async def append(self, item: ItemT) -> ResultT:
        """The item's result, once the batch holding it is committed."""
        future: asyncio.Future[ResultT] = asyncio.get_running_loop().create_future()
        self._jobs.put(_Append(item, future))
        return await _wait(future)

    def stop(self) -> None:
        """The thread ends after the jobs queued so far; queue none after this."""
        self._jobs.put(_STOP)

    def _main(self) -> None:
        job = self._jobs.get()
        while job is not _STOP:
            following = None
            if isinstance(job, _Call):
                _settle([_outcome(job.future, job.fn)])
            elif isinstance(job, _Append):
                batch = [job]
                following = self._take_appends(batch)
                _settle(self._commit_batch(batch))
            job = following if following is not None else self._jobs.get()

    def _take_appends(self, batch: list[_Append]) -> _Call | object | None:
        """Adds the appends queued now to ``batch``; returns the first other job, if any."""
        while True:
            try:
                job = self._jobs.get_nowait()
            except Empty:
                return None
            if not isinstance(job, _Append):
                return job
            batch.append(job)

    def _commit_batch(self, batch: list[_Append]) -> list[Outcome]:
        try:
            results = self._commit([job.item for job in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"commit returned {len(results)} results for {len(batch)}")
        except BaseException as exc:
            return [(job.future, None, exc) for job in batch]
        return [(job.future, result, None) for job, result in zip(batch, results, strict=True)]


async def _wait(future: asyncio.Future[T]) -> T:
    with anyio.CancelScope(shield=True):
        result = await future
    return result


def _outcome(future: asyncio.Future[Any], fn: Callable[[], Any]) -> Outcome:
    try:
        return (future, fn(), None)
    except BaseException as exc:
        return (future, None, exc)


def _settle(outcomes: list[Outcome]) -> None:
    """Hands the outcomes to their futures' event loop(s): one wake-up per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Outcome]] = {}
    for outcome in outcomes:
        by_loop.setdefault(outcome[0].get_loop(), []).append(outcome)
    for loop, part in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits on it
            loop.call_soon_threadsafe(_resolve, part)


def _resolve(outcomes: list[Outcome]) -> None:
    for future, result, exc in outcomes:
        if future.done():
            continue
        if exc is None:
            future.set_result(result)
        elif isinstance(exc, StopIteration):  # a future refuses it, as a coroutine would
            future.set_exception(RuntimeError(f"the store call raised {exc!r}"))
        else:
            future.set_exception(exc)
