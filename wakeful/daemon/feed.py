"""A live, in-memory feed per session: deltas, decisions, run states, tool activity.

The feed is an observer for watchers (SSE, `wakeful send --wait`, the web
page); it is not durable and never blocks the agent: a subscriber that falls
behind by more than its buffer is dropped. It never carries a message on
its own: what the agent says is a record of the outbox (wakeful.daemon.outbox),
which the local chat channel pushes through here to whoever is watching.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

FeedItem = dict[str, Any]
ALL_SESSIONS = "*"


class Feed:
    def __init__(self, buffer: int = 1000) -> None:
        self._buffer = buffer
        self._subscribers: dict[str, set[MemoryObjectSendStream[FeedItem]]] = {}

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
        return reached

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
