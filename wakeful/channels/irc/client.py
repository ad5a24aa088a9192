"""Sending as the bot: the chat channel's platform client, with flood control.

An outbox piece becomes one PRIVMSG per non-blank line, each cut to the bytes a
relayed line has room for (:func:`protocol.text_budget`). IRC has no message id
and drops nothing repeated, so a retry must not resend what went out: the
number of lines of a piece already written is kept in the store, and a retry
(the connection dropped mid-piece) goes on from there. A line written to the
socket just before the connection died may still be lost on the way — IRC gives
no receipt. After a crash mid-send the outbox marks the message unknown and does
not resend it (``resend_safe = False``).
"""

from __future__ import annotations

import anyio
import structlog

from wakeful.channels.irc.connection import IrcConnection, IrcError
from wakeful.channels.irc.protocol import privmsg_lines, text_budget
from wakeful.core.outbox.channels import NeverDeliverable, TryLater
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

# Characters per outbox piece (split_message): a few IRC lines' worth; each line is
# then cut by bytes. Pieces are what the outbox counts as delivered one by one.
MAX_CHARS = 1200


class Throttle:
    """A token bucket: ``burst`` lines at once, then one per ``interval_s``."""

    def __init__(self, burst: int, interval_s: float) -> None:
        self.burst = burst
        self.interval_s = interval_s
        self._tokens = float(burst)
        self._at: float | None = None  # the loop's clock is read first inside the loop
        self._lock = anyio.Lock()

    def _refill(self) -> None:
        now = anyio.current_time()
        if self._at is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._at) / self.interval_s)
        self._at = now

    def try_take(self) -> bool:
        self._refill()
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False

    async def take(self) -> None:
        async with self._lock:
            self._refill()
            if self._tokens < 1:
                await anyio.sleep((1 - self._tokens) * self.interval_s)
                self._refill()
            self._tokens = max(0.0, self._tokens - 1)


def parse_address(address: str) -> tuple[str, str]:
    """(target, lead): "alice" → ("alice", ""); "#home alice" → ("#home", "alice: ")."""
    target, _, nick = address.partition(" ")
    return target, f"{nick}: " if nick else ""


class IrcClient:
    """One connection's sending side (a :class:`wakeful.channels.chat.outgoing.PlatformClient`)."""

    max_chars = MAX_CHARS
    resend_safe = False  # IRC drops no repeated line: a resend posts twice

    def __init__(self, name: str, state: ChannelState, throttle: Throttle) -> None:
        self.connection: IrcConnection | None = None
        self._name = name
        self._state = state
        self._throttle = throttle
        self._sending = anyio.Lock()  # one message's lines are never interleaved with another's
        self.retry_after_s = 5.0

    async def send_text(self, address: str, text: str, *, ref: str) -> None:
        target, lead = parse_address(address)
        async with self._sending:
            connection = self._connected()
            try:
                lines = privmsg_lines(text, text_budget(connection.nick, target), lead)
            except ValueError as exc:
                raise NeverDeliverable(f"chat:irc:{self._name}: {exc}") from None
            progress = f"irc:{self._name}:lines:{ref}"
            done = int(await self._state.get_state(progress) or 0)
            for number in range(done, len(lines)):
                await self._throttle.take()
                try:
                    await self._connected().send("PRIVMSG", target, lines[number])
                except IrcError as exc:
                    raise TryLater(str(exc), retry_after_s=self.retry_after_s) from None
                if number + 1 < len(lines):
                    await self._state.put_state(progress, str(number + 1))
            if done or len(lines) > 1:
                await self._state.put_state(progress, None)

    async def send_typing(self, address: str) -> None:
        """IRCv3 ``+typing`` where the server passes client tags; best effort, and never
        at the cost of a reply line's place in the flood budget."""
        connection = self.connection
        if connection is None or "message-tags" not in connection.caps:
            return
        if self._throttle.try_take():
            target, _ = parse_address(address)
            await connection.send(f"@+typing=active TAGMSG {target}")

    def _connected(self) -> IrcConnection:
        if self.connection is None:
            raise TryLater(
                f"chat:irc:{self._name}: not connected to the IRC server (reconnecting)",
                retry_after_s=self.retry_after_s,
            )
        return self.connection
