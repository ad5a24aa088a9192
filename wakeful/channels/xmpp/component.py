"""One ``[[chat.xmpp]]`` account as a daemon component: the archive in, replies out.

configure: reads the password, registers the outbox channel ``chat:xmpp:<name>``
and the account's health. run: connects (STARTTLS, certificate checked), reads
the archive from the stored cursor (:mod:`.archive`) and again whenever a
message arrives, with 'composing' beside it while a run works; a refused log-in,
a lost connection or a server that does not answer is shown in the health and
retried with back-off, and the daemon stays up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.channels.chat.health import BotHealth
from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.chat.typing_indicator import TypingIndicator
from wakeful.channels.xmpp.config import XmppConfig
from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.kernel.config_base import ConfigError

if TYPE_CHECKING:
    from wakeful.channels.xmpp.archive import ArchiveReader
    from wakeful.channels.xmpp.connection import XmppConnection
    from wakeful.channels.xmpp.outgoing import XmppClient

log = structlog.get_logger(__name__)


class XmppComponent:
    """An XMPP account wakeful chats as."""

    def __init__(self, config: XmppConfig) -> None:
        self.config = config
        self.name = f"chat.xmpp:{config.name}"

    async def configure(self, setup: ComponentSetup) -> None:
        config = self.config
        try:  # slixmpp is the [xmpp] extra: imported only when an account is configured
            from wakeful.channels.xmpp.archive import ArchiveReader
            from wakeful.channels.xmpp.outgoing import XmppClient
        except ImportError as exc:
            raise ConfigError(
                f"{config.key}: the XMPP channel needs slixmpp ({exc}); install it with "
                "`pip install 'wakeful[xmpp]'`"
            ) from None
        self._password = config.password()  # redacted from every log line as it is read
        config.check_ca_file()
        self.setup = setup
        self.inbound = ChatInbound(
            platform="xmpp",
            name=config.name,
            session=config.session,
            allowed=config.allowed_jids,
            setup=setup,
        )
        self.client: XmppClient = XmppClient(retry_after_s=config.retry_min_s)
        setup.add_channel(ChatChannel(self.inbound.channel, self.client, setup.state))
        self.reader: ArchiveReader = ArchiveReader(
            jid=config.jid, name=config.name, inbound=self.inbound, state=setup.state
        )
        self.health = BotHealth(self._publish, config.retry_min_s, config.retry_max_s)
        self.health.publish(False, "not connected yet")
        self.connections = 0
        setup.add_status(self.name, self._status)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()  # the account brings no tools: sessions need not wait for it
        typing = TypingIndicator(
            self.setup.feed, self.inbound, self.client, self.config.typing_every_s
        )
        async with anyio.create_task_group() as group:
            group.start_soon(typing.run, name=f"{self.name} typing")
            every_s = self.config.typing_every_s
            group.start_soon(self.client.settle, every_s, name=f"{self.name} composing")
            while True:
                failure = await self._connected_once()
                await anyio.sleep(self.health.failed("connection", failure))

    async def _connected_once(self) -> str:
        """One connection from log-in to its end; what ended it."""
        from wakeful.channels.xmpp.connection import XmppConnection, XmppUnavailable

        connection = XmppConnection(self.config, self._password, self.reader.wake)
        try:
            await connection.open()
            self.connections += 1
            self.client.connection = connection
            log.info("xmpp connected", account=self.config.name, jid=self.config.full_jid)
            async with anyio.create_task_group() as group:
                group.start_soon(self._read, connection)
                await connection.closed.wait()
                group.cancel_scope.cancel()
            return connection.failure or "disconnected"
        except XmppUnavailable as exc:
            return str(exc)
        except Exception as exc:  # whatever slixmpp raised: shown and retried, never fatal
            log.exception("xmpp connection failed", account=self.config.name)
            return f"{type(exc).__name__}: {exc}"
        finally:
            self.client.connection = None
            with anyio.CancelScope(shield=True):
                await connection.close()

    async def _read(self, connection: XmppConnection) -> None:
        from wakeful.channels.xmpp.connection import XmppUnavailable

        caught_up = False

        def on_caught_up() -> None:
            nonlocal caught_up
            if not caught_up:  # once per connection: the archive is read up to its end
                caught_up = True
                log.info("xmpp caught up", account=self.config.name)
            self.health.working("connected")

        try:
            await self.reader.run(connection, on_caught_up)
        except XmppUnavailable as exc:
            log.warning("xmpp archive read failed", account=self.config.name, error=str(exc))
            connection.fail(f"archive read failed: {exc}")
        except Exception as exc:  # the store, say: read again from the cursor after back-off
            log.exception("xmpp archive read failed", account=self.config.name)
            connection.fail(f"archive read failed: {type(exc).__name__}: {exc}")

    def _publish(self, ok: bool, detail: str) -> None:
        self.setup.set_health(self.name, ComponentHealth(ok, detail))

    def _status(self) -> dict[str, Any]:
        return {
            "connected": self.client.connection is not None,
            "connections": self.connections,
            "messages read": self.reader.messages,
        }
