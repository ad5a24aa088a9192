"""A small scripted IRC server for what no Debian ircd does alone: SASL PLAIN (ngircd
has none; InspIRCd only with a services package) and IRCv3 account-tag. It speaks
the documented exchange (IRCv3 CAP 302, the SASL 3.1 extension: AUTHENTICATE,
900/903/904) and records every line it was sent."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream


@dataclass
class ScriptedIrcd:
    caps: str = "sasl=PLAIN,EXTERNAL account-tag message-tags"
    accounts: dict[str, str] = field(default_factory=dict)  # account → password
    received: list[str] = field(default_factory=list)
    port: int = 0
    clients: list[SocketStream] = field(default_factory=list)
    logged_in: str | None = None
    registered: anyio.Event = field(default_factory=anyio.Event)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    async def until(self, predicate: Callable[[list[str]], bool], timeout_s: float = 10) -> None:
        """Until ``predicate`` holds over the lines received so far."""
        with anyio.fail_after(timeout_s):
            while not predicate(self.received):
                await self._changed.wait()

    async def push(self, line: str) -> None:
        """Send ``line`` to every connected client (a message "from" someone)."""
        for client in self.clients:
            await client.send(line.encode() + b"\r\n")

    async def _serve(self, stream: SocketStream) -> None:
        self.clients.append(stream)
        reader = BufferedByteReceiveStream(stream)
        nick, pending = "*", b""

        async def send(line: str) -> None:
            await stream.send(line.encode() + b"\r\n")

        try:
            while True:
                raw = (await reader.receive_until(b"\r\n", 8192)).decode()
                self.received.append(raw)
                self._changed.set()
                self._changed = anyio.Event()
                command, _, rest = raw.partition(" ")
                if command == "CAP" and rest.startswith("LS"):
                    await send(f":scripted CAP * LS :{self.caps}")
                elif command == "CAP" and rest.startswith("REQ"):
                    wanted = rest.partition(":")[2] if ":" in rest else rest.split()[-1]
                    await send(f":scripted CAP * ACK :{wanted}")
                elif command == "NICK":
                    nick = rest.lstrip(":")
                elif command == "AUTHENTICATE" and rest == "PLAIN":
                    await send("AUTHENTICATE +")
                elif command == "AUTHENTICATE":
                    if rest != "+":
                        pending += rest.encode()
                    if rest != "+" and len(rest) == 400:
                        continue  # more to come
                    _, account, password = base64.b64decode(pending).decode().split("\0")
                    if self.accounts.get(account) == password:
                        self.logged_in = account
                        await send(f":scripted 900 {nick} {nick}!u@h {account} :logged in")
                        await send(f":scripted 903 {nick} :SASL authentication successful")
                    else:
                        await send(f":scripted 904 {nick} :SASL authentication failed")
                elif command == "CAP" and rest.startswith("END"):
                    await send(f":scripted 001 {nick} :Welcome")
                    self.registered.set()
                elif command == "JOIN":
                    await send(f":{nick}!u@h JOIN {rest}")
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError,
                anyio.ClosedResourceError):  # fmt: skip
            pass
        finally:
            self.clients.remove(stream)


@asynccontextmanager
async def scripted_ircd(server: ScriptedIrcd) -> AsyncIterator[ScriptedIrcd]:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, server._serve)
            yield server
            group.cancel_scope.cancel()
