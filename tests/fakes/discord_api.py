"""A fake Discord (API v10): the Gateway (websocket) and the REST API on one loopback port.

It follows Discord's documented shapes. Gateway (``ws://…/gateway/?v=10&encoding=json``):
HELLO (op 10, ``heartbeat_interval``) on connect; IDENTIFY (op 2: token, intents,
properties) → the READY dispatch (``session_id``, ``resume_gateway_url``, ``user``);
RESUME (op 6: token, session_id, seq) → the dispatches after ``seq`` replayed, then
RESUMED, or INVALID_SESSION (op 9, ``d: false``) for a session it no longer has; a
heartbeat (op 1) is ACKed (op 11); a wrong token closes with 4004. Dispatches (op 0)
carry ``t`` and a per-session sequence ``s``; those of a session whose connection is
gone wait for its RESUME, as Discord keeps them.

REST (``/api/v10``, ``Authorization: Bot <token>``): GET /gateway/bot; POST
/channels/{id}/messages (``content`` of at most 2000 characters, ``components``,
``allowed_mentions``, ``nonce`` + ``enforce_nonce``: the same nonce again returns the
first message and posts nothing); POST /channels/{id}/typing (204); GET
/channels/{id}; GET /channels/{id}/messages (``after``, ``limit``, newest first); POST
/users/@me/channels (a DM); GET /users/@me (the bot's user); POST
/interactions/{id}/{token}/callback (once per interaction: type 7 rewrites the message,
type 4 answers). Errors are
``{"message", "code"}``; a 429 is ``{"message", "retry_after", "global"}`` with
``Retry-After`` and ``X-RateLimit-*`` headers. With :attr:`FakeDiscord.bucket` set, POST
/channels/{id}/messages keeps a per-channel bucket and says so in
``X-RateLimit-Limit / -Remaining / -Reset-After / -Bucket``; a call past it is a 429.

People are simulated with :meth:`FakeDiscord.user_says` (a DM, a guild channel or a
thread) and :meth:`FakeDiscord.user_presses` (a button: INTERACTION_CREATE). The
Gateway misbehaves on request: :meth:`drop` (the server closes the connection),
:meth:`send_invalid_session`, :meth:`send_reconnect`, :attr:`withhold_acks`,
:meth:`forget_sessions`; REST fails with :meth:`fail` (429, 502, 500) until
:meth:`recover`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs

import anyio
import anyio.to_thread
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope

from tests.fakes.loopback_http import LoopbackHttpServer, ServesWhileOpen
from tests.fakes.model_server import _read_body

TOKEN = "MTA1fake.discord-bot-token.Xy9_AbCdEfGhIjKlMnOp"
BOT_ID = "1100000000000000001"
BOT_USER = {"id": BOT_ID, "username": "wakeful", "global_name": None, "bot": True}
GUILD_ID = "1200000000000000001"
MAX_CONTENT = 2000
DISCORD_HEARTBEAT_MS = 41250  # what Discord's HELLO says
DM, GUILD_TEXT, PUBLIC_THREAD = 1, 0, 11
MESSAGE_CONTENT = 1 << 15  # a privileged intent
Failure = Literal["down", "429", "500"]
_API = "/api/v10"


def snowflake(n: int) -> str:
    """Discord ids are 64-bit numbers sent as strings, increasing with time."""
    return str(1_300_000_000_000_000_000 + n)


def dm_channel_of(user_id: str) -> str:
    return str(1_400_000_000_000_000_000 + int(user_id) % 10**15)


@dataclass
class SentMessage:
    channel_id: str
    content: str
    message_id: str
    received_at: float  # time.monotonic()
    components: list[dict[str, Any]] = field(default_factory=list)
    nonce: str | None = None
    edits: int = 0

    @property
    def buttons(self) -> list[tuple[str, str]]:
        """(label, custom_id) of its buttons, row by row."""
        return [
            (button["label"], button["custom_id"])
            for row in self.components
            for button in row.get("components", [])
        ]


@dataclass
class Call:
    method: str
    path: str
    status: int
    at: float
    body: Any = None


@dataclass
class _Channel:
    id: str
    type: int
    guild_id: str | None = None
    parent_id: str | None = None
    recipient: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.guild_id:
            body["guild_id"] = self.guild_id
        if self.parent_id:
            body["parent_id"] = self.parent_id
        if self.recipient:
            body["recipients"] = [{"id": self.recipient, "username": f"user{self.recipient}"}]
        body["last_message_id"] = self.messages[-1]["id"] if self.messages else None
        return body


@dataclass
class _Session:
    id: str
    events: list[dict[str, Any]] = field(default_factory=list)  # every dispatch, seq = index + 1
    connection: _Connection | None = None


@dataclass
class _Connection:
    number: int
    path: str
    outgoing: list[dict[str, Any]] = field(default_factory=list)
    close_code: int | None = None  # set: the server closes with it
    session: _Session | None = None
    closed: bool = False
    loop: asyncio.AbstractEventLoop | None = None  # uvicorn's, where the writer waits
    wake: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class _FailureMode:
    kind: Failure
    paths: re.Pattern[str] | None
    retry_after: float
    is_global: bool


class RestError(Exception):
    def __init__(self, status: int, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


class FakeDiscord(ServesWhileOpen):
    """One bot's Discord; state is guarded by one condition shared with waiting tests."""

    def __init__(self, token: str = TOKEN, *, heartbeat_ms: int = DISCORD_HEARTBEAT_MS) -> None:
        self.token = token
        self.heartbeat_ms = heartbeat_ms
        self.withhold_acks = False
        # The portal's "MESSAGE CONTENT INTENT" switch; off: an IDENTIFY asking for it is
        # closed with 4014 (disallowed intents).
        self.message_content_allowed = True
        self.bucket: tuple[int, float] | None = None  # (limit, window s) per channel's POSTs
        self.channels: dict[str, _Channel] = {}
        self.sent: list[SentMessage] = []
        self.typing: list[tuple[str, float]] = []
        self.calls: list[Call] = []
        self.frames: list[dict[str, Any]] = []  # every Gateway frame a client sent, in order
        self.connection_paths: list[str] = []
        self.interaction_answers: dict[str, dict[str, Any]] = {}
        # interaction id → seconds from its dispatch to its callback (Discord allows 3)
        self.answered_after: dict[str, float] = {}
        self._pressed_at: dict[str, float] = {}
        self.session: _Session | None = None  # the live (latest identified) session
        self._sessions: dict[str, _Session] = {}
        self._connections: list[_Connection] = []
        self._interactions: dict[str, tuple[str, str]] = {}  # id → (token, message id)
        self._buckets: dict[str, tuple[float, int]] = {}  # channel → (window start, used)
        self._failure: _FailureMode | None = None
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._closing = False
        self._http = LoopbackHttpServer(self, "fake Discord")
        self.port: int = self._http.port
        self.guild_channel("1500000000000000001")  # one text channel exists from the start

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}{_API}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # --- the world ---------------------------------------------------------

    def guild_channel(self, channel_id: str, *, parent_id: str | None = None) -> str:
        """A text channel of the guild, or with ``parent_id`` a public thread under one."""
        with self._cond:
            kind = PUBLIC_THREAD if parent_id else GUILD_TEXT
            self.channels[channel_id] = _Channel(channel_id, kind, GUILD_ID, parent_id)
        return channel_id

    def user_says(
        self,
        user_id: str,
        text: str,
        *,
        channel_id: str | None = None,
        username: str = "owner",
        bot: bool = False,
        message_type: int = 0,
    ) -> dict[str, Any]:
        """A message from ``user_id``: in their DM with the bot unless ``channel_id`` is a
        guild channel or thread. It is kept in the channel's history and dispatched
        (MESSAGE_CREATE) to the live session, if any."""
        with self._cond:
            channel = self._dm(user_id) if channel_id is None else self.channels[channel_id]
            author = {"id": user_id, "username": username, "global_name": username.title()}
            message: dict[str, Any] = {
                "id": snowflake(next(self._ids)),
                "channel_id": channel.id,
                "author": author | ({"bot": True} if bot else {}),
                "content": text,
                "timestamp": datetime.now(UTC).isoformat(),
                "type": message_type,
                "mentions": [],
                "attachments": [],
                "embeds": [],
            }
            channel.messages.append(message)
            dispatched = dict(message)
            if channel.guild_id:
                # Dispatches name the guild (and the member); REST messages do not.
                dispatched |= {"guild_id": channel.guild_id, "member": {"roles": []}}
            self._dispatch("MESSAGE_CREATE", dispatched)
            return message

    def user_presses(
        self, user_id: str, message: SentMessage, custom_id: str, *, username: str = "owner"
    ) -> str:
        """``user_id`` presses the button ``custom_id`` under ``message``; the interaction id."""
        with self._cond:
            interaction_id = snowflake(next(self._ids))
            token = f"interaction-token-{interaction_id}"
            self._interactions[interaction_id] = (token, message.message_id)
            self._pressed_at[interaction_id] = time.monotonic()
            channel = self.channels[message.channel_id]
            user = {"id": user_id, "username": username, "global_name": username.title()}
            who = {"member": {"user": user, "roles": []}} if channel.guild_id else {"user": user}
            self._dispatch(
                "INTERACTION_CREATE",
                {
                    "id": interaction_id,
                    "application_id": BOT_ID,
                    "type": 3,
                    "token": token,
                    "version": 1,
                    "channel_id": channel.id,
                    **({"guild_id": channel.guild_id} if channel.guild_id else {}),
                    **who,
                    "data": {"custom_id": custom_id, "component_type": 2},
                    "message": {
                        "id": message.message_id,
                        "channel_id": channel.id,
                        "content": message.content,
                        "components": message.components,
                        "author": BOT_USER,
                    },
                },
            )
            return interaction_id

    def _notify(self) -> None:
        """Under the lock: wake the tests waiting and every connection's writer."""
        self._cond.notify_all()
        for connection in self._connections:
            if not connection.closed and connection.loop is not None:
                connection.loop.call_soon_threadsafe(connection.wake.set)

    def _dm(self, user_id: str) -> _Channel:
        channel_id = dm_channel_of(user_id)
        if channel_id not in self.channels:
            self.channels[channel_id] = _Channel(channel_id, DM, recipient=user_id)
        return self.channels[channel_id]

    def _dispatch(self, name: str, data: dict[str, Any]) -> None:
        """Under the lock: one event of the live session; sent now if it is connected."""
        session = self.session
        if session is None:
            return  # nobody has a session: it is only in the channel's history
        payload = {"op": 0, "t": name, "s": len(session.events) + 1, "d": data}
        session.events.append(payload)
        connection = session.connection
        if connection is not None and connection.close_code is None:  # else: for the RESUME
            connection.outgoing.append(payload)
        self._notify()

    # --- the Gateway misbehaving ----------------------------------------------

    def _live(self) -> _Connection:
        live = [c for c in self._connections if not c.closed and c.close_code is None]
        if not live:
            raise AssertionError("no Gateway connection is open")
        return live[-1]

    def drop(self, code: int = 4000) -> None:
        """The server closes the open connection (the session stays resumable)."""
        with self._cond:
            self._live().close_code = code
            self._notify()

    def send_invalid_session(self, *, resumable: bool) -> None:
        with self._cond:
            connection = self._live()
            if not resumable and connection.session is not None:
                self._forget(connection.session)
            connection.outgoing.append({"op": 9, "d": resumable})
            self._notify()

    def send_reconnect(self) -> None:
        with self._cond:
            self._live().outgoing.append({"op": 7, "d": None})
            self._notify()

    def forget_sessions(self) -> None:
        """Every session expires (as after a long outage): a RESUME gets INVALID_SESSION."""
        with self._cond:
            for session in list(self._sessions.values()):
                self._forget(session)

    def _forget(self, session: _Session) -> None:
        self._sessions.pop(session.id, None)
        if self.session is session:
            self.session = None

    def fail(
        self,
        kind: Failure,
        *,
        paths: str | None = None,
        retry_after: float = 1.0,
        is_global: bool = False,
    ) -> None:
        """REST calls fail until :meth:`recover`: all, or those whose ``"<METHOD> <path>"``
        (path without /api/v10) the regex ``paths`` finds."""
        with self._cond:
            pattern = re.compile(paths) if paths else None
            self._failure = _FailureMode(kind, pattern, retry_after, is_global)

    def recover(self) -> None:
        with self._cond:
            self._failure = None
            self._notify()

    # --- what the bot did ------------------------------------------------------

    def ops(self, op: int) -> list[dict[str, Any]]:
        with self._cond:
            return [f for f in self.frames if f.get("op") == op]

    def sent_to(self, channel_id: str) -> list[SentMessage]:
        with self._cond:
            return [m for m in self.sent if m.channel_id == channel_id]

    def wait_for(self, condition: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
        with self._cond:
            if not self._cond.wait_for(condition, timeout_s):
                raise TimeoutError(f"{what} not reached within {timeout_s} s")

    def wait_for_sent(self, n: int, timeout_s: float = 10.0) -> list[SentMessage]:
        self.wait_for(lambda: len(self.sent) >= n, timeout_s, f"{n} sent ({len(self.sent)})")
        with self._cond:
            return list(self.sent)

    async def until(self, condition: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
        """:meth:`wait_for` from async code, without blocking its event loop."""
        await anyio.to_thread.run_sync(
            self.wait_for, condition, timeout_s, what, abandon_on_cancel=True
        )

    async def await_sent(self, n: int, timeout_s: float = 10.0) -> list[SentMessage]:
        return await anyio.to_thread.run_sync(
            self.wait_for_sent, n, timeout_s, abandon_on_cancel=True
        )

    def connected(self) -> bool:
        """A connection is open and its session READY or RESUMED (dispatches flow)."""
        return any(
            not c.closed and c.close_code is None and c.session is not None
            for c in self._connections
        )

    # --- ASGI --------------------------------------------------------------

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "websocket":
            await self._gateway(scope, receive, send)
        elif scope["type"] == "http":
            await self._rest(scope, receive, send)

    # --- the Gateway -------------------------------------------------------

    async def _gateway(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        query = parse_qs(scope.get("query_string", b"").decode())
        with self._cond:
            connection = _Connection(len(self._connections) + 1, scope["path"])
            connection.loop = asyncio.get_running_loop()
            self._connections.append(connection)
            self.connection_paths.append(scope["path"])
            if query.get("v") != ["10"] or query.get("encoding") != ["json"]:
                connection.close_code = 4012  # invalid API version
            connection.outgoing.append({"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}})
            self._notify()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._write, connection, send, group.cancel_scope)
                await self._read(connection, receive)
                group.cancel_scope.cancel()
        finally:
            with self._cond:
                connection.closed = True
                if connection.session is not None and connection.session.connection is connection:
                    connection.session.connection = None
                self._notify()

    async def _read(self, connection: _Connection, receive: ASGIReceiveCallable) -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            frame = json.loads(message.get("text") or message.get("bytes") or b"{}")
            with self._cond:
                self.frames.append(frame)
                self._on_frame(connection, frame)
                self._notify()

    def _on_frame(self, connection: _Connection, frame: dict[str, Any]) -> None:
        """Under the lock: answer one client frame."""
        op, data = frame.get("op"), frame.get("d")
        if op == 1:
            if not self.withhold_acks:
                connection.outgoing.append({"op": 11})
        elif op == 2:
            if not isinstance(data, dict) or data.get("token") != self.token:
                connection.close_code = 4004
                return
            if data.get("intents", 0) & MESSAGE_CONTENT and not self.message_content_allowed:
                connection.close_code = 4014
                return
            session = _Session(f"session{next(self._ids)}")
            self._sessions[session.id] = session
            self.session = session
            self._attach(connection, session)
            resume_url = f"ws://127.0.0.1:{self.port}/resume/{session.id}"
            ready = {"v": 10, "user": BOT_USER, "guilds": [], "session_id": session.id,
                     "resume_gateway_url": resume_url, "application": {"id": BOT_ID}}  # fmt: skip
            self._dispatch("READY", ready)
        elif op == 6:
            session = self._sessions.get(str((data or {}).get("session_id")))
            if session is None or (data or {}).get("token") != self.token:
                connection.outgoing.append({"op": 9, "d": False})
                return
            seq = (data or {}).get("seq") or 0
            self._attach(connection, session)
            connection.outgoing.extend(e for e in session.events if e["s"] > seq)
            self._dispatch("RESUMED", {})

    def _attach(self, connection: _Connection, session: _Session) -> None:
        if session.connection is not None and session.connection is not connection:
            session.connection.close_code = 4000  # one connection per session
        connection.session = session
        session.connection = connection

    async def _write(
        self, connection: _Connection, send: ASGISendCallable, scope: anyio.CancelScope
    ) -> None:
        while True:
            with self._cond:
                frames, connection.outgoing = connection.outgoing, []
                close = connection.close_code if not frames else None
                closing = self._closing
            try:
                for frame in frames:
                    await send({"type": "websocket.send", "text": json.dumps(frame)})
            except OSError:  # uvicorn's ClientDisconnected: the client left, the reader ends
                scope.cancel()
                return
            if close is not None or closing:
                with contextlib.suppress(Exception):
                    await send({"type": "websocket.close", "code": close or 1001})
                scope.cancel()
                return
            with anyio.move_on_after(1.0):  # woken by _notify; the timeout only rechecks
                await connection.wake.wait()
            connection.wake.clear()

    # --- REST ------------------------------------------------------------------

    async def _rest(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        raw = await _read_body(receive)
        method, path = scope["method"], scope["path"].removeprefix(_API)
        query = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        extra: dict[str, str] = {}
        try:
            body = json.loads(raw) if raw else None
            if headers.get("authorization") != f"Bot {self.token}":
                raise RestError(401, "401: Unauthorized")
            self._maybe_fail(method, path, extra)
            status, answer = self._route(method, path, query, body, extra)
        except _RateLimited as exc:
            self._record(method, path, 429, None)
            await _respond(send, 429, exc.body, exc.headers)
            return
        except RestError as exc:
            self._record(method, path, exc.status, None)
            await _respond(send, exc.status, {"message": exc.message, "code": exc.code}, extra)
            return
        except _Down:
            self._record(method, path, 502, None)
            await _respond_raw(send, 502, b"<html><body>502 Bad Gateway</body></html>")
            return
        self._record(method, path, status, body)
        await _respond(send, status, answer, extra)

    def _record(self, method: str, path: str, status: int, body: Any) -> None:
        with self._cond:
            self.calls.append(Call(method, path, status, time.monotonic(), body))
            self._notify()

    def _maybe_fail(self, method: str, path: str, extra: dict[str, str]) -> None:
        with self._cond:
            failure = self._failure
        call = f"{method} {path}"
        if failure is None or (failure.paths is not None and not failure.paths.search(call)):
            return
        if failure.kind == "down":
            raise _Down
        if failure.kind == "500":
            raise RestError(500, "500: Internal Server Error")
        raise _RateLimited(failure.retry_after, failure.is_global, bucket="fake-bucket")

    def _route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any,
        extra: dict[str, str],
    ) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        with self._cond:
            if (method, path) == ("GET", "/gateway/bot"):
                limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
                return 200, {"url": self.gateway_url, "shards": 1, "session_start_limit": limit}
            if (method, path) == ("GET", "/users/@me"):
                return 200, BOT_USER
            if (method, path) == ("POST", "/users/@me/channels"):
                recipient = str((body or {}).get("recipient_id", ""))
                if not recipient.isdigit():
                    raise RestError(400, "Invalid Form Body", 50035)
                return 200, self._dm(recipient).to_json()
            if method == "POST" and len(parts) == 4 and parts[0] == "interactions":
                return self._interaction_callback(parts[1], parts[2], body)
            if parts[0] != "channels" or len(parts) < 2:
                raise RestError(404, "404: Not Found")
            channel = self.channels.get(parts[1])
            if channel is None:
                raise RestError(404, "Unknown Channel", 10003)
            tail = "/".join(parts[2:])
            if (method, tail) == ("GET", ""):
                return 200, channel.to_json()
            if (method, tail) == ("GET", "messages"):
                after = int(query.get("after", "0"))
                limit = min(int(query.get("limit", "50")), 100)
                newer = [m for m in channel.messages if int(m["id"]) > after]
                return 200, list(reversed(newer[:limit]))  # newest first, as Discord pages
            if (method, tail) == ("POST", "typing"):
                self.typing.append((channel.id, time.monotonic()))
                return 204, None
            if (method, tail) == ("POST", "messages"):
                return 200, self._post_message(channel, body or {}, extra)
        raise RestError(405, "405: Method Not Allowed")

    def _post_message(
        self, channel: _Channel, body: dict[str, Any], extra: dict[str, str]
    ) -> dict[str, Any]:
        """Under the lock."""
        self._take_from_bucket(channel.id, extra)
        content = body.get("content")
        if not isinstance(content, str) or not content or len(content) > MAX_CONTENT:
            raise RestError(400, "Invalid Form Body: content: Must be 2000 or fewer in length.",
                            50035)  # fmt: skip
        components = body.get("components") or []
        _check_components(components)
        nonce = body.get("nonce")
        if nonce is not None and (not isinstance(nonce, str) or len(nonce) > 25):
            raise RestError(400, "Invalid Form Body: nonce", 50035)
        if body.get("enforce_nonce") and nonce is not None:
            for message in channel.messages:
                if message.get("nonce") == nonce and message["author"]["id"] == BOT_ID:
                    return message  # the first one, not a second post
        message = {
            "id": snowflake(next(self._ids)),
            "channel_id": channel.id,
            "author": BOT_USER,
            "content": content,
            "components": components,
            "timestamp": datetime.now(UTC).isoformat(),
            "type": 0,
            **({"nonce": nonce} if nonce is not None else {}),
        }
        channel.messages.append(message)
        self.sent.append(
            SentMessage(channel.id, content, message["id"], time.monotonic(), components, nonce)
        )
        # Discord sends the bot its own message too; the bot must not answer itself.
        dispatched = message | ({"guild_id": channel.guild_id} if channel.guild_id else {})
        self._dispatch("MESSAGE_CREATE", dispatched)
        return message

    def _take_from_bucket(self, channel_id: str, extra: dict[str, str]) -> None:
        if self.bucket is None:
            return
        limit, window = self.bucket
        now = time.monotonic()
        start, used = self._buckets.get(channel_id, (now, 0))
        if now - start >= window:
            start, used = now, 0
        reset_after = max(window - (now - start), 0.0)
        if used >= limit:
            raise _RateLimited(reset_after, False, bucket=f"messages-{channel_id}")
        self._buckets[channel_id] = (start, used + 1)
        extra |= {
            "x-ratelimit-limit": str(limit),
            "x-ratelimit-remaining": str(limit - used - 1),
            "x-ratelimit-reset-after": f"{reset_after:.3f}",
            "x-ratelimit-reset": f"{time.time() + reset_after:.3f}",
            "x-ratelimit-bucket": f"messages-{channel_id}",
        }

    def _interaction_callback(self, interaction_id: str, token: str, body: Any) -> tuple[int, Any]:
        """Under the lock."""
        known = self._interactions.get(interaction_id)
        if known is None or known[0] != token:
            raise RestError(404, "Unknown interaction", 10062)
        if interaction_id in self.interaction_answers:
            raise RestError(400, "Interaction has already been acknowledged.", 40060)
        if not isinstance(body, dict) or body.get("type") not in (4, 6, 7):
            raise RestError(400, "Invalid Form Body: type", 50035)
        self.interaction_answers[interaction_id] = body
        self.answered_after[interaction_id] = time.monotonic() - self._pressed_at[interaction_id]
        if body["type"] == 7:
            data = body.get("data") or {}
            for sent in self.sent:
                if sent.message_id == known[1]:
                    sent.content = data.get("content", sent.content)
                    sent.components = data.get("components", sent.components)
                    sent.edits += 1
        return 204, None

    def start(self) -> FakeDiscord:
        self._http.start()
        return self

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._notify()
        # Let the writers send their close frames before uvicorn cuts everything off.
        with self._cond:
            self._cond.wait_for(lambda: all(c.closed for c in self._connections), 2.0)
        self._http.close()


def bot_config(fake: FakeDiscord, directory: Path, **overrides: Any) -> dict[str, Any]:
    """A ``[[chat.discord]]`` entry for this fake; the token in a file."""
    token_file = directory / "discord-token"
    token_file.write_text(fake.token + "\n")
    entry: dict[str, Any] = {
        "name": "dc",
        "bot_token_file": str(token_file),
        "api_base": fake.api_base,
        # Changed from the defaults (1 s … 60 s): a test waits for recovery, not minutes.
        "retry_min_s": 0.05,
        "retry_max_s": 0.5,
    }
    return entry | overrides


def _check_components(components: Any) -> None:
    """Action rows (type 1) of buttons (type 2) with a label, a style and a custom_id."""
    if not isinstance(components, list) or len(components) > 5:
        raise RestError(400, "Invalid Form Body: components", 50035)
    for row in components:
        buttons = row.get("components") if isinstance(row, dict) else None
        if row.get("type") != 1 or not isinstance(buttons, list) or not 1 <= len(buttons) <= 5:
            raise RestError(400, "Invalid Form Body: components: action row", 50035)
        for button in buttons:
            custom_id = button.get("custom_id")
            if button.get("type") != 2 or button.get("style") not in (1, 2, 3, 4):
                raise RestError(400, "Invalid Form Body: components: button", 50035)
            if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
                raise RestError(400, "Invalid Form Body: components: custom_id", 50035)


class _Down(Exception):
    """Answer like a proxy in front of a dead API: 502 with an HTML page."""


class _RateLimited(Exception):
    def __init__(self, retry_after: float, is_global: bool, *, bucket: str) -> None:
        super().__init__("rate limited")
        self.body = {"message": "You are being rate limited.", "retry_after": retry_after,
                     "global": is_global}  # fmt: skip
        self.headers = {
            "retry-after": str(max(1, round(retry_after))),
            "x-ratelimit-scope": "global" if is_global else "user",
        }
        if is_global:
            self.headers["x-ratelimit-global"] = "true"
        else:
            self.headers |= {"x-ratelimit-limit": "5", "x-ratelimit-remaining": "0",
                             "x-ratelimit-reset-after": f"{retry_after:.3f}",
                             "x-ratelimit-bucket": bucket}  # fmt: skip


async def _respond(send: ASGISendCallable, status: int, body: Any, headers: dict[str, str]) -> None:
    raw = b"" if status == 204 else json.dumps(body).encode()
    pairs = [(k.encode(), v.encode()) for k, v in headers.items()]
    if status != 204:
        pairs += [(b"content-type", b"application/json")]
    pairs += [(b"content-length", str(len(raw)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": pairs})
    await send({"type": "http.response.body", "body": raw, "more_body": False})


async def _respond_raw(send: ASGISendCallable, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/html"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
