"""One ``[[chat.irc]]`` connection as a daemon component: connect, listen, answer.

configure: reads the passwords (registered as secrets before anything can log
them), builds the shared chat inbound and the outbox channel ``chat:irc:<name>``.
run: connects and registers, joins the channels, hands each private message and
each channel message addressed to the bot ("wakeful: …") to ``ChatInbound``;
when the link drops (or never comes up) the health says why and it reconnects
with back-off, for as long as the daemon runs. Replies queued meanwhile wait in
the outbox (TryLater) and go out once the connection is back.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.channels.chat.health import BotHealth
from wakeful.channels.chat.inbound import ChatInbound, PlatformMessage
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.chat.typing_indicator import TypingIndicator
from wakeful.channels.irc.client import IrcClient, Throttle
from wakeful.channels.irc.config import IrcConfig
from wakeful.channels.irc.connection import IrcConnection, IrcError, Login
from wakeful.channels.irc.identity import Identities
from wakeful.channels.irc.protocol import Line
from wakeful.core.components.context import ComponentHealth, ComponentSetup

log = structlog.get_logger(__name__)

TYPING_EVERY_S = 3.0  # IRCv3 typing: "active" is renewed at most every 3 s


def addressed_text(text: str, nick: str) -> str | None:
    """The rest of a channel message that starts with ``nick:`` or ``nick,``; else None."""
    match = re.match(rf"^\s*{re.escape(nick)}\s*[:,]\s*(.*)$", text, re.IGNORECASE | re.DOTALL)
    return match.group(1) if match else None


class IrcComponent:
    """``[[chat.irc]]`` entry ``config`` as a connection to its server."""

    def __init__(self, config: IrcConfig) -> None:
        self.config = config
        self.name = f"chat.irc:{config.name}"
        self.channel = f"chat:irc:{config.name}"

    async def configure(self, setup: ComponentSetup) -> None:
        config = self.config
        # Each redacted from every log line as it is read.
        sasl, server_password = config.sasl_password(), config.server_password()
        self.login = Login.of(config, sasl, server_password)
        self.setup = setup
        self.identities = Identities(config.allowed_users)
        self.inbound = ChatInbound(
            platform="irc",
            name=config.name,
            session=config.session,
            allowed=config.allowed_users,
            setup=setup,
        )
        self.client = IrcClient(
            config.name, setup.state, Throttle(config.send_burst, config.send_interval_s)
        )
        self.client.retry_after_s = config.retry_min_s
        setup.add_channel(ChatChannel(self.channel, self.client, setup.state))
        self.health = BotHealth(self._publish, config.retry_min_s, config.retry_max_s)
        self.health.publish(True, "connecting")  # as other chat platforms start: not a failure
        self.connects = 0
        self.messages = 0
        # IRC has no message ids (unless the server sends msgid): ours are this epoch
        # and a count, unique, so the store never mistakes two messages for one.
        self._epoch = secrets.token_hex(4)
        self._count = 0
        setup.add_status(self.name, self._status)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        typing = TypingIndicator(self.setup.feed, self.inbound, self.client, TYPING_EVERY_S)
        async with anyio.create_task_group() as group:
            group.start_soon(typing.run, name=f"{self.name} typing")
            task_status.started()  # the connection brings no tools: sessions need not wait
            while True:
                try:
                    await self._connected_session()
                    detail = "the server closed the connection"
                except IrcError as exc:
                    detail = str(exc)
                except Exception as exc:  # a bug or a store failure: shown and retried, never fatal
                    log.exception("irc connection failed", account=self.config.name)
                    detail = f"{type(exc).__name__}: {exc}"
                finally:
                    self.client.connection = None
                delay = self.health.failed("connection", detail)
                log.warning(
                    "irc connection lost; reconnecting", account=self.config.name,
                    error=detail, retry_in_s=round(delay, 1),
                )  # fmt: skip
                await anyio.sleep(delay)

    async def _connected_session(self) -> None:
        config = self.config
        async with IrcConnection.open(
            config.server, config.port, tls=config.tls, login=self.login
        ) as connection:
            for channel in config.channels:
                await connection.send("JOIN", channel)
            self.connects += 1
            self.client.connection = connection
            self.health.working(f"connected to {config.server}:{config.port} as {connection.nick}")
            log.info(
                "irc connected", account=config.name, nick=connection.nick,
                caps=sorted(connection.caps),
            )  # fmt: skip
            async for line in connection.lines():
                if line.command == "PRIVMSG" and len(line.params) == 2:
                    await self._privmsg(connection, line)
                elif line.command in ("474", "473", "475", "471", "403"):
                    log.warning(
                        "irc channel not joined", account=config.name,
                        reply=" ".join(line.params),
                    )  # fmt: skip

    async def _privmsg(self, connection: IrcConnection, line: Line) -> None:
        target, text = line.params
        nick = line.nick
        if not nick or nick.casefold() == connection.nick.casefold() or "!" not in line.prefix:
            return  # our own echo, or a server notice in PRIVMSG's clothes
        if text.startswith("\x01"):
            return  # CTCP (VERSION, ACTION…): not a message to the agent
        in_channel = target.startswith(("#", "&"))
        if in_channel:
            addressed = addressed_text(text, connection.nick)
            if addressed is None:
                return  # the channel talking among itself
            text = addressed
        account = line.tags.get("account") if "account-tag" in connection.caps else None
        user_id = self.identities.user_id(line.prefix, account)
        # A stranger addressing the bot in a channel is answered privately: the pairing
        # code is theirs, not the channel's.
        address = nick
        if in_channel and await self.inbound.is_allowed(user_id):
            address = f"{target} {nick}"
        self._count += 1
        message_id = line.tags.get("msgid") or f"{self._epoch}.{self._count}"
        self.messages += 1
        await self.inbound.receive(
            PlatformMessage(
                message_id=message_id,
                user_id=user_id,
                user_name=nick,
                address=address,
                text=text,
            )
        )

    def _publish(self, ok: bool, detail: str) -> None:
        self.setup.set_health(self.name, ComponentHealth(ok, detail))

    def _status(self) -> dict[str, Any]:
        connection = self.client.connection
        return {
            "connected": connection is not None,
            "nick": connection.nick if connection is not None else None,
            "capabilities": sorted(connection.caps) if connection is not None else [],
            "connections": self.connects,
            "messages": self.messages,
        }
