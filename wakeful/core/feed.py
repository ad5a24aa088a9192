"""A live, in-memory feed per session: deltas, decisions, run states, tool activity.

The feed is an observer for watchers (SSE, `wakeful send --wait`, the web
page); it is not durable and never blocks the agent: a subscriber that falls
behind by more than its buffer is dropped. It never carries a message on
its own: what the agent says is a record of the outbox (wakeful.core.outbox),
which the local chat channel pushes through here to whoever is watching.

Each item gets a ``feed_id`` (``<epoch>-<n>``, the epoch new per daemon
process) and the most recent items are kept, so a watcher whose connection
dropped can resume after the last id it saw (SSE ``Last-Event-ID``) with
nothing lost and nothing repeated. When the gap is no longer covered (a
restart, or more items than are kept), the watcher is told to ``resync``
from the durable records instead.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

FeedItem = dict[str, Any]
ALL_SESSIONS = "*"
RESYNC = "resync"


class Feed:
    def __init__(self, buffer: int = 1000, keep: int = 2000) -> None:
        self._buffer = buffer
        self._subscribers: dict[str, set[MemoryObjectSendStream[FeedItem]]] = {}
        # Daemon-side observers (a chat platform's typing indicator): they see every
        # item but are nobody reading, so they do not count as reached.
        self._observers: list[Callable[[FeedItem], None]] = []
        self.epoch = secrets.token_hex(4)
        self._count = 0
        self._recent: deque[tuple[int, FeedItem]] = deque(maxlen=keep)

    def publish(self, session: str, item: FeedItem) -> int:
        """Hand ``item`` to the session's watchers; how many it reached."""
        self._count += 1
        item = {"session": session, "at": time.time(), **item}
        item["feed_id"] = f"{self.epoch}-{self._count}"
        self._recent.append((self._count, item))
        reached = 0
        for key in (session, ALL_SESSIONS):
            for stream in list(self._subscribers.get(key, ())):
                try:
                    stream.send_nowait(item)
                    reached += 1
                except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._subscribers[key].discard(stream)
                    stream.close()
        for observer in self._observers:
            observer(item)
        return reached

    @contextmanager
    def observe(self, observer: Callable[[FeedItem], None]) -> Iterator[None]:
        """Call ``observer`` with every item of every session while inside; it must
        not block (hand the item on with ``send_nowait``)."""
        self._observers.append(observer)
        try:
            yield
        finally:
            self._observers.remove(observer)

    @asynccontextmanager
    async def subscribe(
        self, session: str, *, resume_after: str | None = None
    ) -> AsyncIterator[MemoryObjectReceiveStream[FeedItem]]:
        """Live items; with ``resume_after`` (a ``feed_id``) first the kept ones after it."""
        backlog = self._backlog(session, resume_after) if resume_after else []
        size = max(self._buffer, len(backlog) + 1)
        send, receive = anyio.create_memory_object_stream[FeedItem](size)
        # No await between the backlog and joining the watchers: nothing falls in between.
        for item in backlog:
            send.send_nowait(item)
        self._subscribers.setdefault(session, set()).add(send)
        try:
            with receive:
                yield receive
        finally:
            self._subscribers.get(session, set()).discard(send)
            send.close()

    def _backlog(self, session: str, resume_after: str) -> list[FeedItem]:
        epoch, _, number = resume_after.strip().rpartition("-")
        after = int(number) if number.isdigit() else -1
        oldest = self._recent[0][0] if self._recent else self._count + 1
        if epoch != self.epoch or after < 0 or after > self._count or after + 1 < oldest:
            reason = "the daemon restarted" if epoch != self.epoch else "the gap is too long"
            return [{"type": RESYNC, "session": session, "at": time.time(), "reason": reason}]
        return [
            item
            for n, item in self._recent
            if n > after and (session == ALL_SESSIONS or item["session"] == session)
        ]
