"""Server-sent events from a daemon feed, ending promptly on disconnect or shutdown.

Uvicorn waits for open responses before it stops, and an event stream never
finishes by itself, so every open stream registers its cancel scope in a
:class:`StreamRegistry`; the daemon calls :meth:`StreamRegistry.close_all`
when it begins to stop.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager

import anyio
from anyio import CancelScope
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from wakeful.core.front_door import DaemonUnavailable, FeedItem
from wakeful.kernel.http.errors import error_response

FeedOpener = Callable[[], AbstractAsyncContextManager[AsyncIterator[FeedItem]]]
# The first bytes tell a client the subscription is live (send --wait relies on it).
READY = b": ready\n\n"
HEARTBEAT = b": keep-alive\n\n"


class StreamRegistry:
    """The open event streams, so shutdown can end them all at once."""

    def __init__(self) -> None:
        self._scopes: set[CancelScope] = set()
        self.closed = False

    @contextmanager
    def track(self, scope: CancelScope) -> Iterator[None]:
        if self.closed:
            scope.cancel()
        self._scopes.add(scope)
        try:
            yield
        finally:
            self._scopes.discard(scope)

    def close_all(self) -> None:
        """End every open stream and refuse new ones (call from the event loop)."""
        self.closed = True
        for scope in list(self._scopes):
            scope.cancel()

    def __len__(self) -> int:
        return len(self._scopes)


def _one_line(value: object) -> str:
    return str(value).replace("\n", " ").replace("\r", " ")


def encode(item: FeedItem) -> bytes:
    kind = _one_line(item.get("type", "message"))
    data = json.dumps(item, default=str, separators=(",", ":"))
    # The id is what a reconnecting EventSource sends back as Last-Event-ID.
    feed_id = f"id: {_one_line(item['feed_id'])}\n" if "feed_id" in item else ""
    return f"{feed_id}event: {kind}\ndata: {data}\n\n".encode()


class EventStreamResponse(Response):
    """A ``text/event-stream`` response fed by ``open_feed()``."""

    def __init__(
        self,
        open_feed: FeedOpener,
        registry: StreamRegistry,
        heartbeat_s: float,
        *,
        retry_ms: int | None = None,
    ):
        # Not Response.__init__: it would declare Content-Length: 0 for an empty body.
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        self._open_feed = open_feed
        self._registry = registry
        self._heartbeat_s = heartbeat_s
        # How soon a browser's EventSource reconnects after the stream drops.
        self._retry = f"retry: {retry_ms}\n\n".encode() if retry_ms is not None else b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._registry.closed:
            await _unavailable("the daemon is stopping")(scope, receive, send)
            return
        try:
            feed_cm = self._open_feed()
            feed = await feed_cm.__aenter__()
        except DaemonUnavailable as exc:
            await _unavailable(str(exc), exc.retry_after_s)(scope, receive, send)
            return
        try:
            await self._stream(feed, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await feed_cm.__aexit__(None, None, None)

    async def _stream(self, feed: AsyncIterator[FeedItem], receive: Receive, send: Send) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        await send(start)
        await _body(send, READY + self._retry)
        items_in, items_out = anyio.create_memory_object_stream[FeedItem](64)
        async with anyio.create_task_group() as tg:
            with self._registry.track(tg.cancel_scope):
                tg.start_soon(_forward, feed, items_in)
                tg.start_soon(_watch_disconnect, receive, tg.cancel_scope)
                await self._write(items_out, send)
                tg.cancel_scope.cancel()
        await _body(send, b"", more=False)

    async def _write(self, items: MemoryObjectReceiveStream[FeedItem], send: Send) -> None:
        with items:
            while True:
                with anyio.move_on_after(self._heartbeat_s) as waited:
                    try:
                        item = await items.receive()
                    except anyio.EndOfStream:
                        return
                await _body(send, HEARTBEAT if waited.cancelled_caught else encode(item))


async def _forward(feed: AsyncIterator[FeedItem], items: MemoryObjectSendStream[FeedItem]) -> None:
    # A separate task reads the feed so the heartbeat timeout never cancels the
    # feed's own __anext__ (that would close an async-generator feed for good).
    async with items:
        async for item in feed:
            await items.send(item)


async def _watch_disconnect(receive: Receive, scope: CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _body(send: Send, data: bytes, *, more: bool = True) -> None:
    # OSError: the client is gone; the disconnect watcher ends the stream.
    with contextlib.suppress(OSError):
        await send({"type": "http.response.body", "body": data, "more_body": more})


def _unavailable(reason: str, retry_after_s: int = 5) -> Response:
    return error_response(503, f"cannot stream now: {reason}", {"Retry-After": str(retry_after_s)})
