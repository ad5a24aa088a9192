"""Group commit: concurrent writes share one commit, each still returning only after it.

The Redis backend appends events this way: while one batch is being
committed (a script call), the appends that arrive meanwhile queue up as the
next batch, and when the commit finishes one of them commits the whole
batch. (SQLite groups its appends the same way in its connection's own
thread: ``wakeful/store/connection_thread.py``.) Under load this turns
one commit per request into one commit per batch; when idle, an append
commits alone at once.

A queued item is owed to its batch: its caller being cancelled does not take
it out, and the waiter woken to commit a batch cannot be cancelled away
(the waits are shielded), so no batch is ever left without a committer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


@dataclass(eq=False)
class _Batch(Generic[ItemT, ResultT]):
    """Items committed together. Its waiters wake on ``turn`` (the batch before it
    is done); the first to run claims the commit, the others wait for ``done``.
    Two events per batch rather than one per item: this is the webhook's hot path."""

    items: list[ItemT] = field(default_factory=list)
    turn: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    claimed: bool = False
    results: list[ResultT] | None = None
    error: Exception | None = None


class GroupCommit(Generic[ItemT, ResultT]):
    def __init__(
        self,
        commit: Callable[[list[ItemT]], Awaitable[list[ResultT]]],
        *,
        max_batch: int | None = None,
    ) -> None:
        """``commit`` writes a batch and returns one result per item, in order, or
        raises (every item of the batch then raises the same)."""
        self._commit = commit
        self._max_batch = max_batch
        self._queued: deque[_Batch[ItemT, ResultT]] = deque()  # oldest first
        self._committing = False

    async def submit(self, item: ItemT) -> ResultT:
        """The item's result, once the batch holding it is committed."""
        batch = self._queued[-1] if self._queued else None
        if batch is None or (self._max_batch and len(batch.items) >= self._max_batch):
            batch = _Batch()
            self._queued.append(batch)
        index = len(batch.items)
        batch.items.append(item)
        with anyio.CancelScope(shield=True):
            if self._committing:
                await batch.turn.wait()
            if not batch.claimed:
                await self._commit_batch(batch)  # first in, or its batch's turn came
            else:
                await batch.done.wait()
        if batch.results is None:
            raise batch.error or RuntimeError("the batch was not committed")
        return batch.results[index]

    async def _commit_batch(self, batch: _Batch[ItemT, ResultT]) -> None:
        batch.claimed = True
        self._committing = True
        self._queued.popleft()  # the oldest: first in, or the one handed the turn
        try:
            results = await self._commit(batch.items)
            if len(results) != len(batch.items):
                raise RuntimeError(f"commit returned {len(results)} results for {len(batch.items)}")
            batch.results = results
        except Exception as exc:
            batch.error = exc
        finally:
            batch.done.set()
            self._hand_over()

    def _hand_over(self) -> None:
        """After a commit: the oldest batch queued meanwhile is next, else nothing runs."""
        if self._queued:
            self._queued[0].turn.set()  # its first waiter to run commits it
        else:
            self._committing = False
