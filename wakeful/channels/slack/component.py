"""One ``[[chat.slack]]`` entry as a component: the request URLs in, the outbox channel out.

Two request URLs: ``/chat/slack/<name>/events`` (the Events API: messages)
and ``/chat/slack/<name>/interactive`` (Interactivity: Approve/Deny presses
under an approval notice).
"""

from __future__ import annotations

import anyio
import httpx
import structlog
from anyio.abc import TaskStatus
from starlette.routing import Route

from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.slack.client import SlackClient
from wakeful.channels.slack.config import SlackConfig
from wakeful.channels.slack.ingress import SlackEvents
from wakeful.channels.slack.interactive import SlackInteractions
from wakeful.channels.slack.signing import SlackSignature
from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.core.outbox.channels import NeverDeliverable, TryLater
from wakeful.kernel.config_base import read_secret

log = structlog.get_logger(__name__)

AUTH_RETRY_MIN_S, AUTH_RETRY_MAX_S = 1.0, 300.0


class SlackComponent:
    """``POST /chat/slack/<name>/events`` and the ``chat:slack:<name>`` outbox channel."""

    def __init__(self, config: SlackConfig) -> None:
        self.config = config
        self.name = f"chat.slack:{config.name}"

    async def configure(self, setup: ComponentSetup) -> None:
        key = f"chat.slack '{self.config.name}'"
        token = read_secret(self.config.bot_token_file, f"{key} bot_token_file")
        secret = read_secret(self.config.signing_secret_file, f"{key} signing_secret_file")
        http = await setup.resources.enter_async_context(httpx.AsyncClient())
        self._client = SlackClient(self.config.api_base, token, http)
        inbound = ChatInbound(
            platform="slack",
            name=self.config.name,
            session=self.config.session,
            allowed=self.config.allowed_user_ids,
            setup=setup,
        )
        setup.add_channel(ChatChannel(inbound.channel, self._client, setup.state))
        signature = SlackSignature(secret)
        self._events = SlackEvents(self.config.name, signature, inbound)
        self._interactions = SlackInteractions(self.config.name, signature, inbound, self._client)
        base = f"/chat/slack/{self.config.name}"
        setup.add_route(Route(f"{base}/events", self._events.handle, methods=["POST"]))
        setup.add_route(Route(f"{base}/interactive", self._interactions.handle, methods=["POST"]))
        setup.add_status(self.name, self._stats)
        self._setup = setup
        self._health("waiting for auth.test")

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self._interactions.send_feedback, name=f"{self.name} feedback")
            # Events are taken from the first request on: bot messages carry bot_id even
            # before auth.test names the bot's own user.
            task_status.started()
            await self._authenticate()

    async def _authenticate(self) -> None:
        wait_s = AUTH_RETRY_MIN_S
        while True:
            try:
                identity = await self._client.auth_test()
            except NeverDeliverable as exc:  # invalid_auth and the like: retrying won't help
                self._health(f"{exc}; check bot_token_file (the Bot User OAuth Token, xoxb-…)")
                log.error("slack token refused", app=self.config.name, error=str(exc))
                return
            except TryLater as exc:
                self._health(f"{exc}; retrying in {wait_s:g} s")
                await anyio.sleep(wait_s)
                wait_s = min(AUTH_RETRY_MAX_S, wait_s * 2)
                continue
            self._events.bot_user_id = identity.user_id
            self._health(f"connected as {identity.user_id} ({identity.team})", ok=True)
            return  # requests arrive through the routes; the feedback task goes on

    def _stats(self) -> dict[str, object]:
        return {**self._events.stats(), **self._interactions.stats()}

    def _health(self, detail: str, *, ok: bool = False) -> None:
        self._setup.set_health(self.name, ComponentHealth(ok=ok, detail=detail))
