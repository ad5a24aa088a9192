"""Long polling: ``getUpdates`` from the stored offset, committed with each update's event.

The offset lives in the store and is written in the same transaction as the
event an update produced (or alone, for an update that produced none), so a
restart resumes exactly after the last update handled: nothing is answered
twice and nothing is skipped. Telegram forgets updates once a getUpdates
call passes an offset beyond them, which happens only after that commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import structlog

from wakeful.channels.chat.health import BotHealth
from wakeful.channels.telegram.bot_api import BotApi, BotApiError, BotApiUnreachable
from wakeful.channels.telegram.updates import ALLOWED_UPDATES, update_id
from wakeful.store.base import ChannelState, Cursor

log = structlog.get_logger(__name__)

HandleUpdate = Callable[[dict[str, Any], Cursor | None], Awaitable[None]]


class UpdatePoller:
    """Polls one bot for as long as it runs; failures back off, the loop never ends on its own."""

    def __init__(
        self,
        api: BotApi,
        state: ChannelState,
        offset_key: str,
        handle: HandleUpdate,
        health: BotHealth,
        timeout_s: int,
    ) -> None:
        self._api = api
        self._state = state
        self._key = offset_key
        self._handle = handle
        self._health = health
        self._timeout_s = timeout_s
        self.polls = 0

    async def run(self) -> None:
        while True:
            try:
                await self._poll_from(await self._stored_offset())
            except (BotApiError, BotApiUnreachable) as exc:
                await anyio.sleep(self._health.failed("getUpdates", str(exc)))
            except Exception as exc:
                # The store, or a bug handling one update: retry from the stored offset.
                log.warning("telegram update failed", error=f"{type(exc).__name__}: {exc}")
                await anyio.sleep(self._health.failed("handling an update", type(exc).__name__))

    async def _stored_offset(self) -> int:
        stored = await self._state.get_state(self._key)
        return int(stored) if stored else 0

    async def _poll_from(self, offset: int) -> None:
        while True:
            params: dict[str, Any] = {
                "timeout": self._timeout_s,
                "allowed_updates": ALLOWED_UPDATES,
            }
            if offset:
                params["offset"] = offset
            updates = await self._api.call("getUpdates", params, timeout_s=self._timeout_s)
            self.polls += 1
            self._health.working(f"polling; offset {offset}")
            for update in updates or []:
                offset = update_id(update) + 1
                await self._handle(update, Cursor(self._key, str(offset)))
