"""The signal-cli daemon's socket modes (``daemon --tcp`` / ``--socket``): newline-delimited
JSON-RPC both ways on one connection.

Requests go out as lines; their responses come back as lines with the same id,
between the ``receive`` notifications. One task reads every line: a response
wakes the call waiting for it, a notification is queued for the handler — so a
handler that makes a call (a read receipt) never waits on a reader it holds up.

On each connection wakeful calls ``subscribeReceive``: with ``--receive-mode
manual`` (see docs/signal.md) signal-cli fetches messages from Signal only while
subscribed, so what arrives while wakeful is away waits on Signal's servers.
There are no event ids in these modes, so no cursor: a message is kept from
being taken twice by its id in the store (Signal's sender + timestamp).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectSendStream

from wakeful.channels.signal.api import (
    Handle,
    OnOpen,
    SignalError,
    StreamEvent,
    request_body,
    response_result,
)

log = structlog.get_logger(__name__)

MAX_LINE_BYTES = 16 * 1024 * 1024  # a notification with a long text and many attachments
CALL_TIMEOUT_S = 30.0


@dataclass
class _Waiting:
    done: anyio.Event
    body: Any = None


class _UnixStream(ByteStream):
    """A Unix socket on asyncio's own transport. anyio's UNIX socket stream has a race:
    a read that becomes ready in the same loop turn as the reading task is cancelled
    (the daemon stopping) calls ``set_result`` on a cancelled future, an "Exception in
    callback" the loop logs (and anyio's test runner raises). asyncio's transport has no
    such window; TCP goes through anyio, which uses the transport already."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    @classmethod
    async def connect(cls, path: str) -> _UnixStream:
        reader, writer = await asyncio.open_unix_connection(path)
        return cls(reader, writer)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            data = await self._reader.read(max_bytes)
        except (ConnectionError, OSError) as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        if self._writer.is_closing():
            raise anyio.ClosedResourceError
        try:
            self._writer.write(item)
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise anyio.BrokenResourceError from exc

    async def send_eof(self) -> None:
        self._writer.write_eof()

    async def aclose(self) -> None:
        self._writer.close()
        # Closed is what was asked: an error while closing changes nothing.
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(1.0),
            contextlib.suppress(ConnectionError, OSError),
        ):
            await self._writer.wait_closed()


class SignalSocketApi:
    """One daemon's calls and notifications over ``tcp://host:port`` or ``unix:///path``."""

    def __init__(self, url: str, *, account: str | None) -> None:
        self.url = url
        self._account = account
        self._ids = itertools.count(1)
        self._connection: ByteStream | None = None
        self._waiting: dict[int, _Waiting] = {}
        self._write = anyio.Lock()

    async def aclose(self) -> None:
        if self._connection is not None:
            await self._connection.aclose()

    async def _connect(self) -> ByteStream:
        try:
            if self.url.startswith("unix://"):
                return await _UnixStream.connect(self.url.removeprefix("unix://"))
            host, _, port = self.url.removeprefix("tcp://").rpartition(":")
            return await anyio.connect_tcp(host.strip("[]"), int(port))
        except OSError as exc:
            raise SignalError(0, f"cannot connect to {self.url}: {exc}") from None

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        connection = self._connection
        if connection is None:
            raise SignalError(0, f"not connected to signal-cli at {self.url}")
        rid = next(self._ids)
        waiting = self._waiting[rid] = _Waiting(anyio.Event())
        line = json.dumps(request_body(method, params, rid, self._account)) + "\n"
        try:
            async with self._write:
                await connection.send(line.encode())
            with anyio.fail_after(CALL_TIMEOUT_S):
                await waiting.done.wait()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise SignalError(0, f"connection to signal-cli broke: {exc!r}") from None
        except TimeoutError:
            raise SignalError(
                0, f"signal-cli did not answer {method} in {CALL_TIMEOUT_S:.0f} s"
            ) from None
        finally:
            self._waiting.pop(rid, None)
        if waiting.body is None:
            raise self._closed_before(method)
        return response_result(waiting.body)

    def _closed_before(self, method: str) -> SignalError:
        return SignalError(0, f"signal-cli closed the connection at {self.url} before it "
                              f"answered {method}")  # fmt: skip

    async def call_alone(self, method: str, params: dict[str, Any]) -> Any:
        """One call on a connection of its own, closed after it, without subscribing: what
        `wakeful doctor` asks; a running daemon's own subscription is left alone."""
        connection = await self._connect()
        # Notifications the daemon pushes meanwhile (not in manual mode) are dropped here.
        send, receive = anyio.create_memory_object_stream[StreamEvent](math.inf)
        async with connection, receive, anyio.create_task_group() as group:
            self._connection = connection
            try:
                group.start_soon(self._read, connection, send)
                return await self.call(method, params)
            finally:
                self._hung_up(connection)
                group.cancel_scope.cancel()

    async def listen(self, last_event_id: str | None, on_open: OnOpen, handle: Handle) -> None:
        """``last_event_id`` is unused: these modes number nothing."""
        connection = await self._connect()
        # Unbounded: the reader must never wait for the handler (which may wait for a
        # response the reader has to hand over); signal-cli's pace is Signal's.
        send, receive = anyio.create_memory_object_stream[StreamEvent](math.inf)
        async with connection, receive, anyio.create_task_group() as group:
            self._connection = connection
            try:
                group.start_soon(self._read, connection, send)
                try:
                    await self.call("subscribeReceive", {})
                except SignalError as exc:
                    if self._connection is not None:  # not in manual mode: messages come unasked
                        log.info("signal-cli subscribeReceive refused", url=self.url,
                                 error=str(exc))  # fmt: skip
                if self._connection is not None:  # else it ended: never listening
                    on_open()
                    async for event in receive:
                        await handle(event)
            finally:
                self._hung_up(connection)
                group.cancel_scope.cancel()
        raise SignalError(0, f"signal-cli closed the connection at {self.url}")

    def _hung_up(self, connection: ByteStream) -> None:
        """Nothing will answer on ``connection`` any more: new calls are refused, and a
        call waiting for its answer hears it now (body None), not after CALL_TIMEOUT_S."""
        if self._connection is connection:
            self._connection = None
        for waiting in self._waiting.values():
            waiting.done.set()

    async def _read(
        self, connection: ByteStream, events: MemoryObjectSendStream[StreamEvent]
    ) -> None:
        lines = BufferedByteReceiveStream(connection)
        try:
            async with events:
                await self._read_lines(lines, events)
        finally:
            self._hung_up(connection)  # whatever ended the reading

    async def _read_lines(
        self, lines: BufferedByteReceiveStream, events: MemoryObjectSendStream[StreamEvent]
    ) -> None:
        while True:
            try:
                raw = await lines.receive_until(b"\n", MAX_LINE_BYTES)
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError,
                    anyio.ClosedResourceError, anyio.DelimiterNotFound, OSError):  # fmt: skip
                return  # the connection is over: listen() says so
            try:
                message = json.loads(raw)
            except ValueError:
                log.warning("signal-cli sent a line that is not JSON", url=self.url)
                continue
            if not isinstance(message, dict):
                continue
            rid = message.get("id")
            if isinstance(rid, int) and ("result" in message or "error" in message):
                waiting = self._waiting.get(rid)
                if waiting is not None:
                    waiting.body = message
                    waiting.done.set()
            elif message.get("method") == "receive":
                events.send_nowait(StreamEvent(None, "receive", raw.decode()))
