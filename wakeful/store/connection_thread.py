"""The SQLite connection's own thread: calls run there in order, appends in groups.

Before, each store call went through ``anyio.to_thread.run_sync``: per call
the event loop paid three checkpoints, a capacity limiter, two cancel
scopes, a context copy and a ``queue.Queue`` handshake whose futex wake-up
of the sleeping worker alone was an eighth of the loop's CPU under webhook
load; and each group commit was handed over only after the previous one
had come back to the loop. Here one thread owns the connection. The loop
hands over what one of its turns queued as one list on a ``SimpleQueue``
(one wake-up) and each caller awaits an asyncio future; the thread answers
a whole batch with one ``call_soon_threadsafe``. Appends that queue
while a commit runs are taken by the thread straight after it, as one
transaction (group commit), without a round trip through the loop between
the two commits. Jobs run in the order they were queued: an append never
overtakes a call queued before it, nor the other way round.

Like ``to_thread.run_sync``, a caller of ``call`` waits for its job even when
cancelled (the wait is shielded); a queued append is committed whatever its
caller does.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
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
    (every item of the batch then raises the same). Used from one event loop."""

    def __init__(self, name: str, commit: Callable[[list[ItemT]], Sequence[ResultT]]) -> None:
        self._commit = commit
        # Jobs go over in lists, one per turn of the event loop: waking a sleeping
        # thread is a system call (and on a busy VM an inter-processor interrupt), so
        # what one turn queues costs one wake-up and starts as one batch.
        self._queue: SimpleQueue[list[_Call | _Append | object]] = SimpleQueue()
        self._pending: list[_Call | _Append | object] | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    async def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` in the thread, after every job queued before it."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._put(_Call(fn, future))
        with anyio.CancelScope(shield=True):  # as to_thread.run_sync: wait for it
            result = await future
        return result

    async def append(self, item: ItemT) -> ResultT:
        """The item's result, once the batch holding it is committed.

        Not shielded (a cancel scope per append is a few per cent of a webhook's
        CPU): a cancelled caller leaves at once, and its item is committed anyway."""
        future: asyncio.Future[ResultT] = asyncio.get_running_loop().create_future()
        self._put(_Append(item, future))
        return await future

    def stop(self) -> None:
        """The thread ends after the jobs queued so far; queue none after this."""
        self._flush()
        self._queue.put([_STOP])

    def _put(self, job: _Call | _Append) -> None:
        if self._pending is None:
            self._pending = [job]
            asyncio.get_running_loop().call_soon(self._flush)
        else:
            self._pending.append(job)

    def _flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending:
            self._queue.put(pending)

    def _main(self) -> None:
        jobs: deque[_Call | _Append | object] = deque()
        while True:
            if not jobs:
                jobs.extend(self._queue.get())
            job = jobs.popleft()
            if isinstance(job, _Call):
                _settle([_outcome(job.future, job.fn)])
            elif isinstance(job, _Append):
                batch = [job]
                self._take_appends(jobs, batch)
                _settle(self._commit_batch(batch))
            else:  # _STOP
                return

    def _take_appends(self, jobs: deque[_Call | _Append | object], batch: list[_Append]) -> None:
        """Moves the appends queued by now (up to the first other job) into ``batch``."""
        while True:
            while jobs and isinstance(jobs[0], _Append):
                batch.append(jobs.popleft())  # type: ignore[arg-type]
            if jobs:
                return  # another job comes first: the batch ends before it
            try:
                jobs.extend(self._queue.get_nowait())
            except Empty:
                return

    def _commit_batch(self, batch: list[_Append]) -> list[Outcome]:
        try:
            results = self._commit([job.item for job in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"commit returned {len(results)} results for {len(batch)}")
        except BaseException as exc:
            return [(job.future, None, exc) for job in batch]
        return [(job.future, result, None) for job, result in zip(batch, results, strict=True)]


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
