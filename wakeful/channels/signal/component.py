"""One ``[[chat.signal]]`` account as a daemon component: its event stream, channel and typing.

configure: reads the optional proxy token, builds the JSON-RPC client, the
shared chat inbound and the outbox channel ``chat:signal:<name>``.
run: the event stream (with back-off and health while the daemon is away) and
the typing indicator beside it.
"""

from __future__ import annotations

from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.channels.chat.health import BotHealth
from wakeful.channels.chat.inbound import ChatInbound, Received
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.chat.typing_indicator import TypingIndicator
from wakeful.channels.signal.api import (
    DaemonApi,
    SignalApi,
    SignalError,
    StreamEvent,
    receive_params,
)
from wakeful.channels.signal.client import SignalClient
from wakeful.channels.signal.config import SignalConfig
from wakeful.channels.signal.envelopes import SignalMessage, parse_envelope
from wakeful.channels.signal.socket_api import SignalSocketApi
from wakeful.channels.signal.stream import EventStream
from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.store.base import Cursor

log = structlog.get_logger(__name__)


class SignalComponent:
    """``[[chat.signal]]`` entry ``config`` as a running account."""

    def __init__(self, config: SignalConfig) -> None:
        self.config = config
        self.name = f"chat.signal:{config.name}"
        self.ignored = 0  # messages from groups or senders not let in (the status page)
        self._ready_said = False

    async def configure(self, setup: ComponentSetup) -> None:
        config = self.config
        token = config.auth_token()  # redacted from every log line as it is read
        self.api: DaemonApi = (
            SignalApi(config.url, account=config.account, token=token)
            if config.url.startswith(("http://", "https://"))
            else SignalSocketApi(config.url, account=config.account)
        )
        setup.resources.push_async_callback(self.api.aclose)
        self.client = SignalClient(self.api)
        self.inbound = ChatInbound(
            platform="signal",
            name=config.name,
            session=config.session,
            allowed=config.allowed_users,
            setup=setup,
        )
        setup.add_channel(ChatChannel(self.inbound.channel, self.client, setup.state))
        self.setup = setup
        self.health = BotHealth(self._publish, config.retry_min_s, config.retry_max_s)
        self.health.publish(False, f"connecting to {config.url}")
        self.stream = EventStream(
            self.api,
            setup.state,
            f"signal:{config.name}:last_event_id",
            self.handle_event,
            self.health,
            on_ready=self._ready,
        )
        setup.add_status(self.name, self._status)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        typing = TypingIndicator(
            self.setup.feed, self.inbound, self.client, self.config.typing_every_s
        )
        async with anyio.create_task_group() as group:
            group.start_soon(typing.run, name=f"{self.name} typing")
            task_status.started()  # the account brings no tools: sessions need not wait
            await self.stream.run()

    async def handle_event(self, event: StreamEvent, cursor: Cursor | None) -> None:
        params = receive_params(event)
        found = parse_envelope(params, self.config.allowed_users) if params else None
        if found is None:
            await self.inbound.advance(cursor)  # a receipt, typing, a reaction: nothing said
            return
        if found.group_id is not None and not await self._heard_in_group(found):
            await self.inbound.advance(cursor)
            return
        received = await self.inbound.receive(found.message, cursor=cursor)
        if received is Received.SUBMITTED and self.config.read_receipts:
            await self._mark_read(found)

    async def _heard_in_group(self, found: SignalMessage) -> bool:
        """Only allowed groups, and there only allowed (or paired) users: a pairing code
        is never posted into a group (a stranger pairs by writing directly)."""
        user = found.message.user_id
        if found.group_id in self.config.allowed_groups and await self.inbound.is_allowed(user):
            return True
        self.ignored += 1
        log.info(
            "signal group message ignored: group not in allowed_groups or sender not let in",
            account=self.config.name,
            group=found.group_id,
            user=user,
        )
        return False

    async def _mark_read(self, found: SignalMessage) -> None:
        params = {"recipient": [found.author], "targetTimestamp": [found.timestamp], "type": "read"}
        try:
            await self.api.call("sendReceipt", params)
        except SignalError as exc:  # cosmetic: the message is taken either way
            log.info("signal read receipt not sent", account=self.config.name, error=str(exc))

    def _ready(self) -> None:
        if not self._ready_said:
            self._ready_said = True
            log.info("signal account ready", account=self.config.name, url=self.config.url)

    def _publish(self, ok: bool, detail: str) -> None:
        self.setup.set_health(self.name, ComponentHealth(ok, detail))

    def _status(self) -> dict[str, Any]:
        return {
            "url": self.config.url,
            "streams opened": self.stream.connects,
            "events": self.stream.events,
            "ignored": self.ignored,
        }
