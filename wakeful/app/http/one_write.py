"""A response's head and body leave in one write, not two.

uvicorn writes the status line and headers as soon as the app sends
``http.response.start``, and the body as a second write. On loopback each
write is a ``send`` that wakes the client; under webhook load on two busy
cores that second wake-up (and the preemption it invites) cost a quarter
of the event loop's time per request. The head is held here until the
first piece of body, or until the end of this turn of the event loop if
the app awaits something in between (a stream), so nothing waits longer
than the work already queued.
"""

from __future__ import annotations

import asyncio
from typing import Any


class HeadWithBody(asyncio.Transport):
    """One request's view of the connection: the first write is held until the next.

    Only what uvicorn's request cycle calls (``write``, ``close``,
    ``is_closing``) is implemented; the protocol keeps the real transport.
    """

    __slots__ = ("_first", "_flush", "_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._flush: asyncio.Handle | None = None
        self._first = True

    def write(self, data: Any) -> None:
        if self._first:  # the head (or a 100 Continue): wait for what follows it
            self._first = False
            self._held = bytes(data)
            self._flush = self._loop.call_soon(self._write_held)
            return
        if self._held is not None:
            data = self._held + bytes(data)
            self._held = None
            if self._flush is not None:
                self._flush.cancel()
                self._flush = None
        self._transport.write(data)

    def _write_held(self) -> None:
        self._flush = None
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
        self._write_held()  # asyncio sends what it was given before it closes
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()
