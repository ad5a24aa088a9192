"""One IRC connection: registration (CAP, SASL PLAIN, nick collisions), then lines.

``IrcConnection.open`` connects, negotiates the capabilities the server offers
of those wakeful uses (``sasl``, ``account-tag``, ``message-tags``), logs in
with SASL PLAIN when a password is configured (and refuses to go on without
it: see :class:`IrcConfig`), takes the nick or, while it is in use, the nick
with ``_`` appended, and returns once the server welcomed it (001). Its
``lines`` answers PING itself and notices a dead link by silence.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream

from wakeful.channels.irc.protocol import Line, format_line, parse_line

if TYPE_CHECKING:
    from wakeful.channels.irc.config import IrcConfig

log = structlog.get_logger(__name__)

WANTED_CAPS = ("sasl", "account-tag", "message-tags")
REGISTER_TIMEOUT_S = 30.0
IDLE_BEFORE_PING_S = 90.0  # silence this long: ask the server whether it is still there
PING_TIMEOUT_S = 60.0  # and this long without any answer: the link is dead
MAX_LINE_BYTES = 8191 + 512  # tags may take 8191 bytes, the rest 512
SASL_CHUNK = 400  # AUTHENTICATE carries at most 400 bytes of base64 per line
SASL_FAILURES = {"902", "904", "905", "906", "908"}
NICK_IN_USE = {"432", "433", "436", "437"}


class IrcError(Exception):
    """The connection failed or the server refused us; retried with back-off."""


@dataclass(frozen=True)
class Login:
    nick: str
    username: str
    realname: str
    server_password: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None

    @classmethod
    def of(cls, config: IrcConfig, sasl_password: str | None, server_password: str | None) -> Login:
        """The account's log-in, with its passwords as read (and redacted) from their files."""
        return cls(
            nick=config.nick,
            username=config.username,
            realname=config.realname,
            server_password=server_password,
            sasl_username=config.sasl_username,
            sasl_password=sasl_password,
        )


@dataclass
class IrcConnection:
    stream: ByteStream
    nick: str
    caps: set[str] = field(default_factory=set)
    _reader: BufferedByteReceiveStream | None = None
    _write_lock: anyio.Lock = field(default_factory=anyio.Lock)
    _pinged: bool = False

    @classmethod
    @asynccontextmanager
    async def open(
        cls, host: str, port: int, *, tls: bool, login: Login, connect_timeout_s: float = 30.0
    ) -> AsyncIterator[IrcConnection]:
        try:
            with anyio.fail_after(connect_timeout_s):
                stream: ByteStream
                if tls:
                    context = ssl.create_default_context()
                    stream = await anyio.connect_tcp(host, port, ssl_context=context)
                else:
                    stream = await anyio.connect_tcp(host, port)
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            raise IrcError(f"cannot connect to {host}:{port}: {exc}") from None
        async with stream:
            connection = cls(stream, login.nick)
            connection._reader = BufferedByteReceiveStream(stream)
            try:
                with anyio.fail_after(REGISTER_TIMEOUT_S):
                    await connection._register(login)
            except TimeoutError:
                raise IrcError(f"{host}:{port} did not finish registration in time") from None
            yield connection
            await connection.quit()

    async def send(self, command: str, *params: str) -> None:
        data = (format_line(command, *params) + "\r\n").encode()
        async with self._write_lock:
            try:
                await self.stream.send(data)
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                raise IrcError(f"connection lost while sending: {exc}") from None

    async def quit(self) -> None:
        with anyio.move_on_after(2, shield=True):
            with suppress(IrcError):
                await self.send("QUIT", "bye")

    async def read_line(self, timeout_s: float) -> Line | None:
        """The next line (None for a blank or unreadable one); IrcError on EOF or timeout."""
        assert self._reader is not None
        try:
            with anyio.fail_after(timeout_s):
                raw = await self._reader.receive_until(b"\n", MAX_LINE_BYTES)
        except TimeoutError:
            raise
        except (anyio.EndOfStream, anyio.IncompleteRead):
            raise IrcError("the server closed the connection") from None
        except anyio.DelimiterNotFound:
            raise IrcError("the server sent a line longer than IRC allows") from None
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise IrcError(f"connection lost: {exc}") from None
        return parse_line(raw.decode("utf-8", errors="replace"))

    async def lines(self) -> AsyncIterator[Line]:
        """Lines from the server, PINGs answered; IrcError when the link is gone."""
        waiting_pong = False
        while True:
            try:
                line = await self.read_line(PING_TIMEOUT_S if waiting_pong else IDLE_BEFORE_PING_S)
            except TimeoutError:
                if waiting_pong:
                    silent = f"no answer from the server for {PING_TIMEOUT_S:.0f} s"
                    raise IrcError(silent) from None
                await self.send("PING", "wakeful")
                waiting_pong = True
                continue
            waiting_pong = False
            if line is None:
                continue
            if line.command == "PING":
                await self.send("PONG", *(line.params[-1:] or ["wakeful"]))
                continue
            if line.command == "ERROR":
                raise IrcError(f"server closed the link: {' '.join(line.params)}")
            if line.command == "NICK" and line.nick == self.nick and line.params:
                self.nick = line.params[0]
            yield line

    async def _register(self, login: Login) -> None:
        await self.send("CAP", "LS", "302")
        if login.server_password is not None:
            await self.send("PASS", login.server_password)
        await self.send("NICK", self.nick)
        await self.send("USER", login.username, "0", "*", login.realname)
        offered: dict[str, str] = {}
        while True:
            line = await self.read_line(REGISTER_TIMEOUT_S)
            if line is None:
                continue
            command, params = line.command, line.params
            if command == "PING":
                await self.send("PONG", *(params[-1:] or ["wakeful"]))
            elif command == "CAP" and len(params) >= 3:
                await self._cap(login, params, offered)
            elif command == "AUTHENTICATE" and params[:1] == ["+"]:
                await self._authenticate(login)
            elif command == "903":  # RPL_SASLSUCCESS
                log.info("irc SASL login succeeded", account=login.sasl_username or login.nick)
                await self.send("CAP", "END")
            elif command in SASL_FAILURES:
                raise IrcError(f"SASL login refused ({command}): {params[-1] if params else ''}")
            elif command in NICK_IN_USE:
                await self._next_nick(params)
            elif command == "421" and params[1:2] == ["CAP"]:  # a server without IRCv3
                self._no_sasl(login)
            elif command == "001":
                self.nick = params[0] if params else self.nick
                return
            elif command in ("464", "465", "ERROR"):
                raise IrcError(f"the server refused the login ({command}): {' '.join(params)}")

    async def _cap(self, login: Login, params: list[str], offered: dict[str, str]) -> None:
        sub = params[1].upper()
        if sub == "LS":
            for item in params[-1].split():
                name, _, value = item.partition("=")
                offered[name] = value
            if params[2] == "*":  # more LS lines follow
                return
            wanted = [cap for cap in WANTED_CAPS if cap in offered]
            if login.sasl_password is not None:
                mechanisms = offered.get("sasl", "")
                if "sasl" not in offered or (mechanisms and "PLAIN" not in mechanisms.split(",")):
                    self._no_sasl(login)
            else:
                wanted = [cap for cap in wanted if cap != "sasl"]
            if wanted:
                await self.send("CAP", "REQ", " ".join(wanted))
            else:
                await self.send("CAP", "END")
        elif sub == "ACK":
            self.caps |= set(params[-1].split())
            if "sasl" in self.caps and login.sasl_password is not None:
                await self.send("AUTHENTICATE", "PLAIN")
            else:
                await self.send("CAP", "END")
        elif sub == "NAK":
            if login.sasl_password is not None:
                raise IrcError(f"the server refused the capabilities {params[-1]!r} (SASL)")
            await self.send("CAP", "END")

    def _no_sasl(self, login: Login) -> None:
        if login.sasl_password is not None:
            raise IrcError(
                "the server offers no SASL PLAIN, and sasl_password_file is set: not "
                "connecting unauthenticated"
            )

    async def _authenticate(self, login: Login) -> None:
        assert login.sasl_password is not None
        account = login.sasl_username or login.nick
        payload = base64.b64encode(f"{account}\0{account}\0{login.sasl_password}".encode()).decode()
        chunks = [payload[i : i + SASL_CHUNK] for i in range(0, len(payload), SASL_CHUNK)]
        for chunk in chunks:
            await self.send("AUTHENTICATE", chunk)
        if not chunks or len(chunks[-1]) == SASL_CHUNK:
            await self.send("AUTHENTICATE", "+")  # says "that was all" after a full chunk

    async def _next_nick(self, params: list[str]) -> None:
        taken = params[1] if len(params) > 2 else self.nick
        if len(taken) >= 30:
            raise IrcError(f"nick {taken!r} and its variants are all in use")
        self.nick = taken + "_"
        log.info("irc nick in use; trying another", nick=self.nick, taken=taken)
        await self.send("NICK", self.nick)
