"""The account's message archive (XEP-0313, MAM) read in order, with a stored cursor.

Every message is taken from the archive, never from the live stream: a live
message only says "read the archive now". The archive id of the last message
taken is the cursor, committed in the same store transaction as that message's
event (``ChatInbound.receive(..., cursor=...)``), and the event id is the
archive id too. So a crash at any point re-reads from the last committed id,
and what is read again is dropped by the store as a duplicate: exactly once,
also for everything sent while wakeful was down (the server archives it all).

With no cursor yet (a new account, a new data directory) the archive's newest
id is taken as the start: what was said before wakeful was set up is history,
not questions to answer now.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import structlog

from wakeful.channels.chat.inbound import ChatInbound, PlatformMessage
from wakeful.channels.xmpp.connection import (
    Archived,
    XmppConnection,
    XmppUnknownArchiveId,
)
from wakeful.store.base import ChannelState, Cursor

log = structlog.get_logger(__name__)

PAGE = 50  # messages per archive query
# Read the archive this often even without a live message (one may have gone to another
# resource of the account, or the stream may have missed it): nothing waits longer.
POLL_S = 60.0
START = "start"  # cursor value: the archive was empty when first read; read all of it


class ArchiveReader:
    """Archive → events for one account, while one connection lasts."""

    def __init__(self, *, jid: str, name: str, inbound: ChatInbound, state: ChannelState) -> None:
        self.jid = jid
        self.inbound = inbound
        self.state = state
        self.cursor_key = f"xmpp:{name}:archive_cursor"
        self.messages = 0  # messages taken (status)
        self._wake = anyio.Event()

    def wake(self) -> None:
        """A message arrived: read the archive now."""
        self._wake.set()

    async def run(self, connection: XmppConnection, on_caught_up: Callable[[], None]) -> None:
        """Read until the connection ends; raises XmppUnavailable when it fails."""
        while True:
            self._wake = anyio.Event()  # before reading: a message during the read wakes again
            await self.catch_up(connection)
            on_caught_up()
            with anyio.move_on_after(POLL_S):
                await self._wake.wait()

    async def catch_up(self, connection: XmppConnection) -> None:
        after = await self.state.get_state(self.cursor_key)
        if after is None:
            after = await connection.last_archive_id() or START
            await self.state.put_state(self.cursor_key, after)
            log.info("xmpp archive read for the first time: history skipped", account=self.jid)
        while True:
            try:
                items, last = await connection.archive_page(None if after == START else after, PAGE)
            except XmppUnknownArchiveId:
                # Expired from the archive while wakeful was down: everything the server
                # still keeps is newer than it. Read it all; ids already taken are dropped.
                log.warning("xmpp archive cursor expired; reading the whole archive",
                            account=self.jid, cursor=after)  # fmt: skip
                after = START
                continue
            for item in items:
                await self._take(item)
                after = item.archive_id
            if last:
                return

    async def _take(self, item: Archived) -> None:
        cursor = Cursor(self.cursor_key, item.archive_id)
        if (
            item.sender == self.jid
            or "@" not in item.sender
            or item.type not in ("chat", "normal")
            or not item.body
        ):
            # The account's own replies are archived too; a server's or a component's notices
            # (no user to pair), groupchat, errors, bodiless: passed.
            with anyio.CancelScope(shield=True):
                await self.inbound.advance(cursor)
            return
        message = PlatformMessage(
            message_id=item.archive_id,
            user_id=item.sender,
            user_name=None,
            address=item.sender,
            text=item.body,
            occurred_at=item.stamp,
        )
        # Shielded: a connection dropping mid-commit ends the read after this message.
        with anyio.CancelScope(shield=True):
            await self.inbound.receive(message, cursor=cursor)
        self.messages += 1
