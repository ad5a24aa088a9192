"""One Discord bot as a daemon component: the Gateway in, the REST API out.

configure: reads the token, builds the REST client, the shared chat inbound
and outbox channel. run: the Gateway session (gateway.py) with a typing
indicator beside it. Messages are heard in direct messages, in the guild
channels of ``allowed_channel_ids`` and in threads under those; a message in
a thread is answered in the thread (its channel id is the thread's).

The Gateway has no cursor that outlives a restart, so each event's id is the
Discord message id (the store drops a redelivery) and the last message id
handled per channel is kept as the cursor, committed with its event. When a
new session starts (READY: at start-up, or after Discord refused a resume)
the messages written after that id are fetched
(``GET /channels/{id}/messages?after=…``) for every channel the bot listens
in that it can name: the owners' DMs, the allowed guild channels, and every
channel (a paired user's DM, a thread) a message was handled from before.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import structlog
from anyio.abc import TaskStatus

from wakeful.channels.chat.decisions import standing
from wakeful.channels.chat.health import BotHealth
from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.chat.typing_indicator import TypingIndicator
from wakeful.channels.discord.client import MAX_MESSAGE_CHARS, DiscordClient
from wakeful.channels.discord.config import DiscordConfig
from wakeful.channels.discord.gateway import Gateway
from wakeful.channels.discord.messages import (
    THREAD_TYPES,
    ButtonPress,
    button_press,
    is_direct,
    platform_message,
)
from wakeful.channels.discord.rest import DiscordRest, RateLimited, RestError, RestUnreachable
from wakeful.core.approvals import DecideOutcome
from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.kernel.config_base import ConfigError, read_secret
from wakeful.store.base import Cursor

log = structlog.get_logger(__name__)

PAGE = 100  # Discord's largest page of GET /channels/{id}/messages
UPDATE_MESSAGE, CHANNEL_MESSAGE = 7, 4  # interaction callback types
EPHEMERAL = 1 << 6  # message flag: only the one who pressed sees it
NOT_YOURS = "Only the owner can decide this."
NOT_OURS = "This button does nothing any more."


def read_token(config: DiscordConfig) -> str:
    """The bot token; ConfigError names the key when it is unusable."""
    key = f"chat.discord '{config.name}'.bot_token_file"
    token = read_secret(config.bot_token_file, key)  # it is in every request
    if any(ch.isspace() for ch in token):
        raise ConfigError(
            f"{key}: the token has spaces in it; paste only the token from the Developer "
            "Portal's Bot page (Reset Token), without 'Bot ' in front"
        )
    return token


class DiscordComponent:
    """``[[chat.discord]]`` entry ``config`` as a running bot."""

    def __init__(self, config: DiscordConfig) -> None:
        self.config = config
        self.name = f"chat.discord:{config.name}"
        self._cursor_prefix = f"discord:{config.name}:after:"
        self._allowed_channels = frozenset(config.allowed_channel_ids)
        self._parents: dict[str, str | None] = {}  # channel → its thread's parent (None: no thread)
        self._latest: dict[str, int] = {}  # channel → the newest message id given as a cursor
        self.caught_up = 0  # messages found by the start-up fetch (status)

    async def configure(self, setup: ComponentSetup) -> None:
        config = self.config
        token = read_token(config)
        http = httpx.AsyncClient()
        setup.resources.push_async_callback(http.aclose)
        self.rest = DiscordRest(config.api_base, token, http)
        self.client = DiscordClient(self.rest)
        self.inbound = ChatInbound(
            platform="discord",
            name=config.name,
            session=config.session,
            allowed=config.allowed_user_ids,
            setup=setup,
        )
        setup.add_channel(ChatChannel(self.inbound.channel, self.client, setup.state))
        self.setup = setup
        self.health = BotHealth(self._publish, config.retry_min_s, config.retry_max_s)
        self.health.publish(True, "starting")
        self.gateway = Gateway(
            token, self._gateway_url, self._dispatch, self._catch_up, self.health
        )
        setup.add_status(self.name, self._status)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        typing = TypingIndicator(
            self.setup.feed, self.inbound, self.client, self.config.typing_every_s
        )
        async with anyio.create_task_group() as group:
            group.start_soon(typing.run, name=f"{self.name} typing")
            task_status.started()
            await self.gateway.run()

    async def _gateway_url(self) -> str:
        answer = await self.rest.call("GET", "/gateway/bot")
        url = answer.get("url") if isinstance(answer, dict) else None
        if not isinstance(url, str):
            raise RestUnreachable("GET /gateway/bot: no url in the answer")
        return url

    # --- what arrives -----------------------------------------------------------------

    async def _dispatch(self, name: str, data: dict[str, Any]) -> None:
        if name == "MESSAGE_CREATE":
            await self._message(data, known_channel=False)
        elif name == "INTERACTION_CREATE":
            press = button_press(data)
            if press is not None:
                await self._pressed(press)
        elif name in ("THREAD_CREATE", "THREAD_UPDATE", "CHANNEL_CREATE", "CHANNEL_UPDATE"):
            self._note_channel(data)
        elif name == "GUILD_CREATE":
            for channel in [*(data.get("threads") or []), *(data.get("channels") or [])]:
                if isinstance(channel, dict):
                    self._note_channel(channel)

    async def _message(self, data: dict[str, Any], *, known_channel: bool) -> None:
        message = platform_message(data)
        if message is None:
            return  # a bot's (ours too), a webhook's, a join notice: nothing to hear or mark
        if not (known_channel or is_direct(data) or await self._listens_in(message.address)):
            return  # a guild channel the owner did not name: not ours to answer, nor to pair in
        channel, number = message.address, int(message.message_id)
        cursor = None
        if number > self._latest.get(channel, 0):  # the cursor only moves forward
            cursor = Cursor(self._cursor_prefix + channel, message.message_id)
        await self.inbound.receive(message, cursor=cursor)
        if cursor is not None:
            self._latest[channel] = number

    def _note_channel(self, channel: dict[str, Any]) -> None:
        channel_id, parent = channel.get("id"), channel.get("parent_id")
        if not isinstance(channel_id, str):
            return
        is_thread = channel.get("type") in THREAD_TYPES and isinstance(parent, str)
        self._parents[channel_id] = parent if is_thread else None

    async def _listens_in(self, channel_id: str) -> bool:
        """An allowed guild channel, or a thread under one."""
        if channel_id in self._allowed_channels:
            return True
        if channel_id not in self._parents:
            try:
                self._note_channel(await self.rest.call("GET", f"/channels/{channel_id}"))
            except RestError as exc:  # no access, unknown: not a channel we listen in
                log.info("discord channel not readable", channel=channel_id, error=str(exc))
                self._parents[channel_id] = None
            # Rate limits and outages propagate: the gateway reconnects and the RESUME
            # replays this message, so it is not lost.
        return self._parents.get(channel_id) in self._allowed_channels

    # --- the start-up fetch -------------------------------------------------------------

    async def _catch_up(self) -> None:
        """Messages written while no session was open, from each channel's stored cursor."""
        stored = {
            key.removeprefix(self._cursor_prefix): value
            for key, value in (await self.setup.state.states_under(self._cursor_prefix)).items()
        }
        channels = set(self._allowed_channels) | set(stored)
        for user in self.config.allowed_user_ids:
            dm = await self._fetch("POST", "/users/@me/channels", json={"recipient_id": user})
            if isinstance(dm, dict) and isinstance(dm.get("id"), str):
                channels.add(dm["id"])
        for channel in sorted(channels, key=int):
            await self._catch_up_channel(channel, stored.get(channel))

    async def _catch_up_channel(self, channel: str, after: str | None) -> None:
        key = self._cursor_prefix + channel
        if after is None:
            # First sight: start from now. What was said before the bot ran is not for it.
            info = await self._fetch("GET", f"/channels/{channel}")
            last = info.get("last_message_id") if isinstance(info, dict) else None
            if isinstance(last, str):
                await self.setup.state.put_state(key, last)
                self._latest[channel] = max(self._latest.get(channel, 0), int(last))
            return
        while True:
            params = {"after": after, "limit": str(PAGE)}
            page = await self._fetch("GET", f"/channels/{channel}/messages", params=params)
            if not isinstance(page, list) or not page:
                return
            for data in sorted(page, key=lambda m: int(m["id"])):  # Discord sends newest first
                self.caught_up += 1
                await self._message(data, known_channel=True)
                after = max(after, data["id"], key=int)
            if len(page) < PAGE:
                return

    async def _fetch(self, method: str, path: str, **kwargs: Any) -> Any:
        """One REST call, retried through rate limits and outages; None when Discord
        refuses it for good (no access to that channel: logged, the rest goes on)."""
        while True:
            try:
                return await self.rest.call(method, path, **kwargs)
            except RateLimited as exc:
                await anyio.sleep(exc.retry_after_s)
            except RestError as exc:
                if exc.status < 500 and exc.status != 401:
                    log.warning("discord catch-up skipped a channel", call=path, error=str(exc))
                    return None
                await anyio.sleep(self.health.failed("catching up", str(exc)))
            except RestUnreachable as exc:
                await anyio.sleep(self.health.failed("catching up", str(exc)))

    # --- buttons ------------------------------------------------------------------------

    async def _pressed(self, press: ButtonPress) -> None:
        """Decide, then answer the interaction (Discord wants it within 3 s): the notice
        rewritten with the decision that stands and no buttons, or a line only the presser
        sees. A press delivered twice finds the approval decided: the same rewrite."""
        if press.request is None:
            await self._answer(press, CHANNEL_MESSAGE, {"content": NOT_OURS, "flags": EPHEMERAL})
            return
        result = await self.inbound.press(press.user_id, press.request)
        if result is None:
            await self._answer(press, CHANNEL_MESSAGE, {"content": NOT_YOURS, "flags": EPHEMERAL})
        elif result.approval is None or result.outcome is DecideOutcome.UNKNOWN:
            await self._answer(press, CHANNEL_MESSAGE, {"content": result.line, "flags": EPHEMERAL})
        else:
            shown = f"{press.message_content}\n\n{standing(result.approval)}".strip()
            data = {"content": shown[-MAX_MESSAGE_CHARS:], "components": []}
            await self._answer(press, UPDATE_MESSAGE, data)

    async def _answer(self, press: ButtonPress, kind: int, data: dict[str, Any]) -> None:
        path = f"/interactions/{press.interaction_id}/{press.token}/callback"
        try:
            await self.rest.call("POST", path, json={"type": kind, "data": data})
        except (RateLimited, RestError, RestUnreachable) as exc:  # cosmetic: the decision stands
            log.info("discord button answer failed", error=str(exc))

    # --- health and status ------------------------------------------------------------

    def _publish(self, ok: bool, detail: str) -> None:
        self.setup.set_health(self.name, ComponentHealth(ok, detail))

    def _status(self) -> dict[str, Any]:
        gateway = self.gateway
        return {
            "connects": gateway.connects,
            "identifies": gateway.identifies,
            "resumes": gateway.resumes,
            "zombies": gateway.zombies,
            "seq": gateway.session.seq if gateway.session else None,
            "caught_up": self.caught_up,
            "rest_calls": self.rest.calls,
        }
