"""One ``[[chat.matrix]]`` account as a daemon component: its sync loop, channel and typing.

configure: reads the credential (a token file, or a password to log in with),
registers the outbox channel ``chat:matrix:<name>`` and the account's health.
run: logs in if it must (retrying while the homeserver is down), then syncs
until the daemon stops, with the typing indicator beside it.
"""

from __future__ import annotations

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.chat.typing_indicator import TypingIndicator
from wakeful.channels.matrix.api import MatrixApi, MatrixError
from wakeful.channels.matrix.config import MatrixConfig
from wakeful.channels.matrix.outgoing import MatrixClient
from wakeful.channels.matrix.strangers import MAX_STRANGER_ROOMS
from wakeful.channels.matrix.sync_loop import BACKOFF_MAX_S, MatrixSync, SyncHealth
from wakeful.core.components.context import ComponentHealth, ComponentSetup

log = structlog.get_logger(__name__)


class MatrixComponent:
    """A Matrix account wakeful listens and answers as."""

    def __init__(self, config: MatrixConfig) -> None:
        self.config = config
        self.name = f"chat.matrix:{config.name}"
        self.channel = f"chat:matrix:{config.name}"

    async def configure(self, setup: ComponentSetup) -> None:
        config = self.config
        kind, secret = config.credential()
        self._password = secret if kind == "password" else None
        self.api = MatrixApi(config.homeserver, access_token=secret if kind == "token" else None)
        setup.resources.push_async_callback(self.api.aclose)
        self.setup = setup
        self.inbound = ChatInbound(
            platform="matrix",
            name=config.name,
            session=config.session,
            allowed=config.allowed_users,
            setup=setup,
        )
        self.client = MatrixClient(
            self.api, config.user_id, config.name, setup.state, config.msgtype
        )
        setup.add_channel(ChatChannel(self.channel, self.client, setup.state))
        self._health(SyncHealth())
        self.sync = MatrixSync(
            api=self.api,
            user_id=config.user_id,
            name=config.name,
            inbound=self.inbound,
            state=setup.state,
            login=self._login if self._password is not None else None,
            timeout_s=config.sync_timeout_s,
            on_health=self._health,
            send=setup.send_message,
        )
        sync = self.sync
        setup.add_status(
            self.channel,
            lambda: {
                "ok": sync.health.ok,
                "detail": sync.health.detail,
                "syncs": sync.health.synced,
                "messages": sync.health.messages,
                "failures": sync.health.failures,
                "encrypted rooms not readable": sync.encrypted.status(),
                "strangers' rooms waiting for pairing": (
                    f"{sync.strangers.waiting} of at most {MAX_STRANGER_ROOMS}"
                ),
            },
        )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()  # the account brings no tools: sessions need not wait for it
        if self._password is not None:
            await self._login_until_done()
        typing = TypingIndicator(
            self.setup.feed, self.inbound, self.client, self.config.typing_every_s
        )
        async with anyio.create_task_group() as group:
            group.start_soon(typing.run, name=f"{self.name} typing")
            group.start_soon(self.sync.run, name=f"{self.name} sync")

    async def _login(self) -> None:
        assert self._password is not None
        await self.api.login(self.config.user_id, self._password, self.config.device)
        log.info("matrix logged in", account=self.config.name, device=self.config.device)

    async def _login_until_done(self) -> None:
        delay = 1.0
        while True:
            try:
                await self._login()
                return
            except MatrixError as exc:
                self._health(SyncHealth(ok=False, detail=f"log-in failed: {exc}"))
                log.warning("matrix log-in failed", account=self.config.name, error=str(exc))
            await anyio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)

    def _health(self, health: SyncHealth) -> None:
        self.setup.set_health(self.channel, ComponentHealth(health.ok, health.detail))
