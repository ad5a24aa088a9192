"""The Discord Gateway: one websocket session kept alive, resumed after a drop.

The protocol (API v10, JSON): the server says HELLO (op 10) with
``heartbeat_interval``; the client IDENTIFYs (op 2: token, intents,
properties) and gets a READY dispatch with ``session_id`` and
``resume_gateway_url``; dispatches (op 0) carry a sequence number ``s``.
Heartbeats (op 1, the last sequence) go every interval, the first after a
random fraction of it (jitter, so a fleet of clients does not beat in step);
each must be ACKed (op 11) before the next is due, else the connection is a
zombie and is closed and resumed. The server may ask for a heartbeat now
(op 1), to reconnect (op 7 RECONNECT) or say the session is invalid
(op 9: ``d`` true, it may be resumed; false, identify again after 1-5 s).

After any drop the client reconnects to ``resume_gateway_url`` and RESUMEs
(op 6: token, session_id, seq); Discord then replays the dispatches missed.
The client closes with code 4000, never 1000 (which would end the session).
Close codes that no retry fixes (bad token, intents not allowed) are shown
in health and retried at the longest back-off, so fixing the portal settings
is enough; the daemon stays up.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from wakeful.channels.chat.health import BotHealth

log = structlog.get_logger(__name__)

DISPATCH, HEARTBEAT, IDENTIFY, RESUME, RECONNECT, INVALID_SESSION, HELLO, HEARTBEAT_ACK = (
    0, 1, 2, 6, 7, 9, 10, 11,
)  # fmt: skip
GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT = 1 << 0, 1 << 9, 1 << 12, 1 << 15
# GUILDS: threads' parents (THREAD_CREATE); MESSAGE_CONTENT: a privileged intent, switched
# on in the Developer Portal, without which guild messages arrive with empty content.
INTENTS = GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT
QUERY = "?v=10&encoding=json"
RECONNECT_CLOSE = 4000  # not 1000/1001: Discord keeps the session for a RESUME
# Close codes Discord sends that retrying does not fix, with what the operator should do.
FATAL_CLOSES = {
    4004: "the bot token was refused: put the token from the Developer Portal's Bot page in "
    "bot_token_file",
    4010: "invalid shard",
    4011: "this bot is in too many guilds for one connection (sharding required)",
    4012: "invalid API version",
    4013: "invalid intents",
    4014: "intents not allowed: switch on MESSAGE CONTENT INTENT on the Developer Portal's "
    "Bot page",
}
NEW_SESSION_CLOSES = frozenset({4007, 4009})  # invalid seq, session timed out: identify again
HELLO_TIMEOUT_S = 20.0
RESUME_ATTEMPTS = 3  # failures in a row at resume_gateway_url before identifying afresh
MAX_FRAME_BYTES = 8 * 1024 * 1024  # READY of a bot in many guilds is large

Dispatch = Callable[[str, dict[str, Any]], Awaitable[None]]


class Reconnect(Exception):
    """End this connection and connect again (resuming when the session allows)."""


class FatalClose(Exception):
    """Discord closed with a code that needs the operator; the message says what to do."""


@dataclass
class Session:
    session_id: str
    resume_url: str
    seq: int | None = None


class Gateway:
    """Connects, identifies or resumes, beats, and hands each dispatch to ``dispatch``.

    ``on_ready`` runs after READY (a new session: what happened while none was
    open is for the caller to fetch) and ``on_resumed`` after RESUMED (Discord
    replayed what was missed). Both and ``dispatch`` run on the reading task,
    so dispatches are handled one at a time, in order."""

    def __init__(
        self,
        token: str,
        gateway_url: Callable[[], Awaitable[str]],
        dispatch: Dispatch,
        on_ready: Callable[[], Awaitable[None]],
        health: BotHealth,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self._token = token
        self._gateway_url = gateway_url
        self._dispatch = dispatch
        self._on_ready = on_ready
        self._health = health
        self._rng = rng or random.Random()
        self.session: Session | None = None
        self.connects = 0
        self.identifies = 0
        self.resumes = 0
        self.zombies = 0  # connections closed for a missing heartbeat ACK
        self.user_id: str | None = None  # the bot's own id, from READY

    async def run(self) -> None:
        """For as long as the component runs; every failure backs off and connects again."""
        while True:
            try:
                url = self.session.resume_url if self.session else await self._gateway_url()
                await self._connect(url)
                # Closed without a reason we raised: Discord ended it (a deploy, a timeout).
                await anyio.sleep(self._rng.uniform(0.0, 1.0))
            except Reconnect:
                pass  # asked for (RECONNECT, INVALID_SESSION, a zombie): at once
            except FatalClose as exc:
                self.session = None
                log.warning("discord gateway refused the bot", error=str(exc))
                self._health.failed("gateway", str(exc))
                await anyio.sleep(self._health.retry_max_s)  # a setting to fix, not a blip
            except Exception as exc:  # network, handshake, the REST call for the URL, a bug
                what = f"{type(exc).__name__}: {exc}"
                log.info("discord gateway connection failed", error=what)
                if self.session is not None and self._health.failures >= RESUME_ATTEMPTS:
                    # The session's own address keeps failing: start over at the main one.
                    self.session = None
                await anyio.sleep(self._health.failed("gateway", what))

    async def _connect(self, url: str) -> None:
        self.connects += 1
        async with connect(
            url.rstrip("/") + "/" + QUERY,
            max_size=MAX_FRAME_BYTES,
            close_timeout=2.0,
            ping_interval=None,  # Discord's own heartbeat keeps it alive
            open_timeout=HELLO_TIMEOUT_S,
        ) as ws:
            with anyio.fail_after(HELLO_TIMEOUT_S):
                hello = await _receive(ws)
            if hello.get("op") != HELLO:
                raise Reconnect(f"expected HELLO, got op {hello.get('op')}")
            interval_s = float(hello["d"]["heartbeat_interval"]) / 1000.0
            await self._greet(ws)
            beat = _Heartbeat(ws, interval_s, lambda: self._seq, self._rng)
            ending: BaseException | None = None
            async with anyio.create_task_group() as group:
                group.start_soon(beat.run)
                try:
                    await self._read(ws, beat)
                except (Reconnect, FatalClose) as exc:
                    # Raised after the group: from inside it would come wrapped in a group.
                    ending = exc
                group.cancel_scope.cancel()
            if ending is not None:
                raise ending
            if beat.zombie:
                self.zombies += 1
                raise Reconnect("no heartbeat ACK: a zombie connection")

    @property
    def _seq(self) -> int | None:
        return self.session.seq if self.session else None

    async def _greet(self, ws: ClientConnection) -> None:
        if self.session is not None:
            self.resumes += 1
            data: dict[str, Any] = {
                "token": self._token,
                "session_id": self.session.session_id,
                "seq": self.session.seq,
            }
            await _send(ws, RESUME, data)
            return
        self.identifies += 1
        properties = {"os": "linux", "browser": "wakeful", "device": "wakeful"}
        data = {"token": self._token, "intents": INTENTS, "properties": properties}
        await _send(ws, IDENTIFY, data)

    async def _read(self, ws: ClientConnection, beat: _Heartbeat) -> None:
        while True:
            try:
                payload = await _receive(ws)
            except ConnectionClosed as exc:
                self._closed(exc, beat)
                return
            op = payload.get("op")
            if op == DISPATCH:
                await self._on_dispatch(payload)
            elif op == HEARTBEAT:
                await beat.now()
            elif op == HEARTBEAT_ACK:
                beat.acked = True
            elif op == RECONNECT:
                await ws.close(RECONNECT_CLOSE, "reconnect asked")
                raise Reconnect("Discord asked to reconnect")
            elif op == INVALID_SESSION:
                await self._invalid_session(ws, bool(payload.get("d")))

    async def _on_dispatch(self, payload: dict[str, Any]) -> None:
        seq, name, data = payload.get("s"), payload.get("t"), payload.get("d")
        if not isinstance(data, dict) or not isinstance(name, str):
            return
        if name == "READY":
            user = data.get("user") or {}
            self.user_id = user.get("id") if isinstance(user.get("id"), str) else None
            self.session = Session(str(data["session_id"]), str(data["resume_gateway_url"]))
        if name == "READY":
            self._health.working("connected (new session)")
            await self._on_ready()
            # Again: a catch-up that had to wait for REST showed as failing meanwhile.
            self._health.working("connected (new session)")
        elif name == "RESUMED":
            self._health.working("connected (resumed)")
        else:
            await self._dispatch(name, data)
        # Only once handled: a dispatch whose handling failed is replayed by the RESUME.
        if isinstance(seq, int) and self.session is not None:
            self.session.seq = seq

    async def _invalid_session(self, ws: ClientConnection, resumable: bool) -> None:
        if not resumable:
            self.session = None
        # Discord asks for a random 1-5 s before identifying again.
        await anyio.sleep(self._rng.uniform(1.0, 5.0))
        await ws.close(RECONNECT_CLOSE, "invalid session")
        raise Reconnect(f"invalid session (resumable: {resumable})")

    def _closed(self, exc: ConnectionClosed, beat: _Heartbeat) -> None:
        code = exc.rcvd.code if exc.rcvd is not None else None
        if code in FATAL_CLOSES:
            raise FatalClose(f"Discord closed the gateway with {code}: {FATAL_CLOSES[code]}")
        if code in NEW_SESSION_CLOSES:
            self.session = None
        if not beat.zombie:
            reason = exc.rcvd.reason if exc.rcvd is not None else ""
            log.info("discord gateway closed", code=code, reason=reason)


class _Heartbeat:
    """Beats every interval; a beat due while the last is unACKed closes the connection."""

    def __init__(
        self,
        ws: ClientConnection,
        interval_s: float,
        seq: Callable[[], int | None],
        rng: random.Random,
    ) -> None:
        self._ws, self._interval_s, self._seq, self._rng = ws, interval_s, seq, rng
        self.acked = True
        self.zombie = False

    async def run(self) -> None:
        await anyio.sleep(self._interval_s * self._rng.random())
        while True:
            if not self.acked:
                self.zombie = True
                await self._ws.close(RECONNECT_CLOSE, "heartbeat not acknowledged")
                return
            await self.now()
            await anyio.sleep(self._interval_s)

    async def now(self) -> None:
        self.acked = False
        with contextlib.suppress(ConnectionClosed):  # the reader sees the close and ends it
            await _send(self._ws, HEARTBEAT, self._seq())


async def _send(ws: ClientConnection, op: int, data: object) -> None:
    await ws.send(json.dumps({"op": op, "d": data}))


async def _receive(ws: ClientConnection) -> dict[str, Any]:
    raw = await ws.recv()
    payload = json.loads(raw)
    if not isinstance(payload, dict):
        raise Reconnect("a gateway frame that is not a JSON object")
    return payload
