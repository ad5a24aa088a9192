"""One ``[[chat.whatsapp]]`` entry as a component: the webhook in, the outbox channel out.

configure: reads the three secrets, builds the client, the shared chat
inbound and outbox channel (wrapped to mind the 24-hour window) and the
webhook route ``/chat/whatsapp/<name>/webhook`` (GET: Meta's verification;
POST: notifications). run: a typing indicator beside a check of the token
and the phone number ID (``GET /{version}/{phone-number-id}``), retried with
back-off while Meta is unreachable; a refused token is shown in the health
with the key to fix, and the component stays up.
"""

from __future__ import annotations

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
from wakeful.channels.whatsapp.client import BadCredentials, WhatsAppClient
from wakeful.channels.whatsapp.config import WhatsAppConfig
from wakeful.channels.whatsapp.signing import AppSignature
from wakeful.channels.whatsapp.webhook import WhatsAppWebhook
from wakeful.channels.whatsapp.window import ServiceWindow, Template, WindowedChannel
from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.core.outbox.channels import NeverDeliverable, TryLater
from wakeful.kernel.config_base import read_secret

log = structlog.get_logger(__name__)


class WhatsAppComponent:
    """``/chat/whatsapp/<name>/webhook`` and the ``chat:whatsapp:<name>`` outbox channel."""

    def __init__(self, config: WhatsAppConfig) -> None:
        self.config = config
        self.name = f"chat.whatsapp:{config.name}"

    async def configure(self, setup: ComponentSetup) -> None:
        config = self.config
        key = f"chat.whatsapp '{config.name}'"
        token = read_secret(config.access_token_file, f"{key} access_token_file")
        app_secret = read_secret(config.app_secret_file, f"{key} app_secret_file")
        verify_token = read_secret(config.verify_token_file, f"{key} verify_token_file")
        self._setup = setup
        self.health = BotHealth(self._publish, config.retry_min_s, config.retry_max_s)
        http = await setup.resources.enter_async_context(httpx.AsyncClient())
        self.client = WhatsAppClient(
            config.api_base,
            config.api_version,
            config.phone_number_id,
            token,
            http,
            self._sending,
        )
        self.inbound = ChatInbound(
            platform="whatsapp",
            name=config.name,
            session=config.session,
            allowed=config.allowed_user_ids,
            setup=setup,
        )
        window = ServiceWindow(setup.state, config.name)
        template = (
            Template(config.template_name, config.template_language)
            if config.template_name is not None
            else None
        )
        chat = ChatChannel(self.inbound.channel, self.client, setup.state)
        self.channel = WindowedChannel(chat, self.client, window, setup.state, template)
        setup.add_channel(self.channel)
        self.webhook = WhatsAppWebhook(
            config.name,
            config.phone_number_id,
            verify_token,
            AppSignature(app_secret),
            self.inbound,
            self.client,
            window,
            setup,
        )
        path = config.webhook_path
        setup.add_route(Route(path, self.webhook.verify, methods=["GET"]))
        setup.add_route(Route(path, self.webhook.notify, methods=["POST"]))
        setup.add_status(self.name, self._status)
        self._credentials_ok = False
        self.health.publish(False, "starting: checking the access token and phone_number_id")

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        typing = TypingIndicator(
            self._setup.feed, self.inbound, self.client, self.config.typing_every_s
        )
        async with anyio.create_task_group() as group:
            group.start_soon(typing.run, name=f"{self.name} typing")
            # Notifications are taken from the first request on; the check only tells health.
            task_status.started()
            await self._check_credentials()

    async def _check_credentials(self) -> None:
        while True:
            try:
                number = await self.client.check_credentials()
            except NeverDeliverable as exc:  # retrying won't help: say which key to fix
                # A refused token names access_token_file; else most likely a wrong ID.
                hint = "" if isinstance(exc, BadCredentials) else "; check phone_number_id"
                self.health.publish(False, f"{exc}{hint}")
                log.error("whatsapp credentials refused", account=self.config.name, error=str(exc))
                return
            except TryLater as exc:
                wait_s = self.health.failed("checking the phone number", str(exc))
                await anyio.sleep(wait_s)
                continue
            self._credentials_ok = True
            shown = number.get("display_phone_number") or self.config.phone_number_id
            named = f" ({number['verified_name']})" if number.get("verified_name") else ""
            self.health.working(f"ready as {shown}{named}; webhook {self.config.webhook_path}")
            return

    def _sending(self, failure: NeverDeliverable | TryLater | None) -> None:
        """After each Graph API call: an outage shows until a call works again."""
        if failure is None:
            if self.health.failures or not self._credentials_ok:
                self._credentials_ok = True  # a call went through: the token works
                self.health.working(f"ready; webhook {self.config.webhook_path}")
        elif isinstance(failure, BadCredentials):
            self._credentials_ok = False
            self.health.publish(False, str(failure))
        elif isinstance(failure, TryLater) and failure.retry_after_s is None:
            self.health.failed("the Graph API", f"{failure}; retried with back-off")

    def _publish(self, ok: bool, detail: str) -> None:
        self._setup.set_health(self.name, ComponentHealth(ok=ok, detail=detail))

    def _status(self) -> dict[str, Any]:
        return {**self.webhook.stats(), "sent": self.client.sent, "kept": self.channel.kept}
