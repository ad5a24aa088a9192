"""The event stream of one account: ``receive`` events in, each handled once, in order.

The cursor is the SSE event id signal-cli gives every event: it is committed in
the same store transaction as the event a message became (or on its own for an
event that carries nothing for the agent), and sent back as ``Last-Event-ID``
when the stream is opened again, so signal-cli first replays what came after it
(it keeps the last 1000 events). When signal-cli itself was restarted it does
not know the id and replays every event it kept; the store drops those already
taken by their id (Signal's sender + timestamp). A broken stream is retried with
back-off and shown in the account's health; the daemon stays up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import structlog

from wakeful.channels.chat.health import BotHealth
from wakeful.channels.signal.api import DaemonApi, SignalError, StreamEvent
from wakeful.store.base import ChannelState, Cursor

log = structlog.get_logger(__name__)

Handle = Callable[[StreamEvent, Cursor | None], Awaitable[None]]


class EventStream:
    """Reads the daemon's event stream until cancelled; reconnects after any failure."""

    def __init__(
        self,
        api: DaemonApi,
        state: ChannelState,
        cursor_key: str,
        handle: Handle,
        health: BotHealth,
        on_ready: Callable[[], None] = lambda: None,
    ) -> None:
        self._api = api
        self._state = state
        self.cursor_key = cursor_key
        self._handle = handle
        self._health = health
        self._on_ready = on_ready
        self.connects = 0  # streams opened (the status page)
        self.events = 0  # events handled

    async def run(self) -> None:
        while True:
            last = await self._state.get_state(self.cursor_key)
            try:
                await self._api.listen(last, self._opened, self._one)
            except SignalError as exc:
                wait_s = self._health.failed("event stream", str(exc))
                log.warning("signal event stream down", url=self._api.url, error=str(exc),
                            retry_s=round(wait_s, 2))  # fmt: skip
                await anyio.sleep(wait_s)

    async def _one(self, event: StreamEvent) -> None:
        # An event without an id (the socket modes) has no cursor: its id in the store
        # (Signal's sender + timestamp) is what keeps it from being taken twice.
        cursor = Cursor(self.cursor_key, event.id) if event.id else None
        await self._handle(event, cursor)
        self.events += 1

    def _opened(self) -> None:
        self.connects += 1
        self._health.working(f"listening to {self._api.url}")
        self._on_ready()
