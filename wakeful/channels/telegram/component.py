"""One Telegram bot as a daemon component: updates in (polling or webhook), replies out.

configure: reads the token (and the webhook secret), builds the client, the
shared chat inbound and outbox channel, and in webhook mode the route.
run: getMe, then either setWebhook or deleteWebhook + the long poll, with a
typing indicator beside it; every Bot API failure backs off and is shown in
the bot's health, and the component stays up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import structlog
from anyio.abc import TaskStatus
from starlette.routing import Route

from wakeful.channels.chat.health import BotHealth
from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.chat.typing_indicator import TypingIndicator
from wakeful.channels.telegram.bot_api import BotApi, BotApiError, BotApiUnreachable
from wakeful.channels.telegram.buttons import ApprovalButtons
from wakeful.channels.telegram.client import TelegramClient
from wakeful.channels.telegram.config import SECRET_TOKEN, TelegramConfig
from wakeful.channels.telegram.polling import UpdatePoller
from wakeful.channels.telegram.updates import ALLOWED_UPDATES, button_press, platform_message
from wakeful.channels.telegram.webhook import WebhookReceiver
from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.kernel.config_base import ConfigError, read_secret
from wakeful.store.base import Cursor

log = structlog.get_logger(__name__)


def read_secrets(config: TelegramConfig) -> tuple[str, str | None]:
    """The bot token and the webhook secret; ConfigError names the key when one is unusable."""
    where = f"chat.telegram '{config.name}'"
    # The token is in every Bot API URL.
    token = read_secret(config.bot_token_file, f"{where}.bot_token_file")
    if config.secret_token_file is None:
        return token, None
    secret = read_secret(config.secret_token_file, f"{where}.secret_token_file")
    if not SECRET_TOKEN.match(secret):
        raise ConfigError(
            f"{where}.secret_token_file: Telegram accepts 1-256 characters of A-Z a-z 0-9 _ - "
            "only; e.g. write the output of `openssl rand -hex 32` to the file"
        )
    return token, secret


class TelegramComponent:
    """``[[chat.telegram]]`` entry ``config`` as a running bot."""

    def __init__(self, config: TelegramConfig) -> None:
        self.config = config
        self.name = f"chat.telegram:{config.name}"

    async def configure(self, setup: ComponentSetup) -> None:
        config = self.config
        token, secret = read_secrets(config)
        http = httpx.AsyncClient()
        setup.resources.push_async_callback(http.aclose)
        self.api = BotApi(config.api_base, token, http)
        self.client = TelegramClient(self.api)
        self.inbound = ChatInbound(
            platform="telegram",
            name=config.name,
            session=config.session,
            allowed=[str(user) for user in config.allowed_user_ids],
            setup=setup,
        )
        setup.add_channel(ChatChannel(self.inbound.channel, self.client, setup.state))
        self.buttons = ApprovalButtons(self.api, self.inbound)
        self.setup = setup
        self.health = BotHealth(self._publish, config.retry_min_s, config.retry_max_s)
        self.health.publish(True, "starting")
        self.receiver: WebhookReceiver | None = None
        if secret is not None and config.mode == "webhook":
            self.receiver = WebhookReceiver(secret, self.handle_update)
            setup.add_route(Route(config.webhook_path, self.receiver.handle, methods=["POST"]))
        self.poller = UpdatePoller(
            self.api,
            setup.state,
            f"telegram:{config.name}:offset",
            self.handle_update,
            self.health,
            config.poll_timeout_s,
        )
        setup.add_status(self.name, self._status)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        typing = TypingIndicator(
            self.setup.feed, self.inbound, self.client, self.config.typing_every_s
        )
        async with anyio.create_task_group() as group:
            group.start_soon(typing.run, name=f"{self.name} typing")
            task_status.started()
            await self._until_done("getMe", self._introduce)
            if self.receiver is not None:
                await self._until_done("setWebhook", self._set_webhook)
                self.health.working(
                    f"webhook at {self.config.public_url}{self.config.webhook_path}"
                )
            else:
                await self._until_done("deleteWebhook", self._delete_webhook)
                await self.poller.run()

    async def handle_update(self, update: dict[str, Any], cursor: Cursor | None) -> None:
        press = button_press(update)
        if press is not None:
            await self.buttons.pressed(press, cursor)
            return
        message = platform_message(update)
        if message is None:
            await self.inbound.advance(cursor)
            return
        await self.inbound.receive(message, cursor=cursor)

    async def _introduce(self) -> None:
        me = await self.api.call("getMe")
        username = me.get("username", "") if isinstance(me, dict) else ""
        log.info("telegram bot ready", bot=self.config.name, username=username)

    async def _set_webhook(self) -> None:
        assert self.receiver is not None and self.config.public_url is not None
        secret = self.receiver.secret
        url = self.config.public_url + self.config.webhook_path
        params = {"url": url, "secret_token": secret, "allowed_updates": ALLOWED_UPDATES}
        await self.api.call("setWebhook", params)

    async def _delete_webhook(self) -> None:
        # getUpdates answers 409 while a webhook is set (say, from an earlier webhook mode).
        await self.api.call("deleteWebhook", {"drop_pending_updates": False})

    async def _until_done(self, what: str, step: Callable[[], Awaitable[None]]) -> None:
        while True:
            try:
                await step()
                return
            except (BotApiError, BotApiUnreachable) as exc:
                await anyio.sleep(self.health.failed(what, str(exc)))

    def _publish(self, ok: bool, detail: str) -> None:
        self.setup.set_health(self.name, ComponentHealth(ok, detail))

    def _status(self) -> dict[str, Any]:
        status: dict[str, Any] = {"mode": self.config.mode, "polls": self.poller.polls}
        if self.receiver is not None:
            status |= {"received": self.receiver.received, "refused": self.receiver.refused}
        return status
