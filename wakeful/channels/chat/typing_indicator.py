"""'typing…' on a chat platform while the agent works on what was said there."""

from __future__ import annotations

import anyio
import structlog
from anyio.streams.memory import MemoryObjectSendStream

from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.chat.outgoing import PlatformClient
from wakeful.core.feed import Feed, FeedItem

log = structlog.get_logger(__name__)


class TypingIndicator:
    """Watches the feed's run states of the sessions this account fed and, while
    one is busy, renews the platform's typing status every ``every_s`` seconds
    (Telegram's lasts 5 s, Matrix's as long as asked)."""

    def __init__(
        self, feed: Feed, inbound: ChatInbound, client: PlatformClient, every_s: float = 4.0
    ) -> None:
        self._feed = feed
        self._inbound = inbound
        self._client = client
        self._every_s = every_s
        self._busy: dict[str, anyio.CancelScope] = {}
        self._stopped = anyio.Event()  # set whenever nothing shows "typing…"
        self._stopped.set()

    async def wait_stopped(self) -> None:
        """Until no session shows "typing…" (the status page, tests)."""
        await self._stopped.wait()

    async def run(self) -> None:
        send, receive = anyio.create_memory_object_stream[FeedItem](256)
        busy = self._busy
        with self._feed.observe(lambda item: self._pass_on(item, send)), receive:
            async with anyio.create_task_group() as group:
                async for item in receive:
                    session, state = str(item.get("session")), item.get("state")
                    if state == "busy" and session not in busy:
                        scope = anyio.CancelScope()
                        busy[session] = scope
                        self._stopped = anyio.Event()
                        group.start_soon(self._keep_typing, session, scope)
                    elif state == "idle" and session in busy:
                        busy.pop(session).cancel()
                        if not busy:
                            self._stopped.set()

    def _pass_on(self, item: FeedItem, send: MemoryObjectSendStream[FeedItem]) -> None:
        if item.get("type") != "run" or item.get("session") not in self._inbound.conversations:
            return
        try:
            send.send_nowait(item)
        except anyio.WouldBlock:  # far behind: a missed busy/idle costs a typing bubble, no more
            log.debug("typing indicator behind; run state dropped")

    async def _keep_typing(self, session: str, scope: anyio.CancelScope) -> None:
        with scope:
            while True:
                address = self._inbound.conversations.get(session)
                if address is not None:
                    try:
                        await self._client.send_typing(address)
                    except Exception as exc:  # cosmetic: never let it stop the channel
                        log.debug("typing indicator failed", channel=self._inbound.channel,
                                  error=str(exc))  # fmt: skip
                await anyio.sleep(self._every_s)
