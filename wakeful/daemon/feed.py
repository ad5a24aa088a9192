"""A live, in-memory feed per session: deltas, decisions, run states, tool activity.

The feed is an observer for watchers (SSE, `wakeful send --wait`, the web
page); it is not durable and never blocks the agent: a subscriber that falls
behind by more than its buffer is dropped. It never carries a message on
its own: what the agent says is a record of the outbox (wakeful.daemon.outbox),
which the local chat channel pushes through here to whoever is watching.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

FeedItem = dict[str, Any]
ALL_SESSIONS = "*"


class Feed:
    def __init__(self, buffer: int = 1000) -> None:
        self._buffer = buffer
        self._subscribers: dict[str, set[MemoryObjectSendStream[FeedItem]]] = {}
        # Daemon-side observers (a chat platform's typing indicator): they see every
        # item but are nobody reading, so they do not count as reached.
        self._observers: list[Callable[[FeedItem], None]] = []

    def publish(self, session: str, item: FeedItem) -> int:
        """Hand ``item`` to the session's watchers; how many it reached."""
        item = {"session": session, "at": time.time(), **item}
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
    async def subscribe(self, session: str) -> AsyncIterator[MemoryObjectReceiveStream[FeedItem]]:
        send, receive = anyio.create_memory_object_stream[FeedItem](self._buffer)
        self._subscribers.setdefault(session, set()).add(send)
        try:
            with receive:
                yield receive
        finally:
            self._subscribers.get(session, set()).discard(send)
            send.close()
