"""Approve/Deny pressed under an approval notice: decide, answer the press, show the outcome.

A press is a ``callback_query`` update with an update id like a message's,
so it moves the offset exactly once (the cursor is committed as soon as the
decision is in the store). Only an allowed owner's press decides anything.
Telegram shows a spinner on the button until ``answerCallbackQuery``, so
every press is answered, with a short text; a decided (or already decided)
approval's message is edited to show the decision that stands, its keyboard
removed. Both calls are
cosmetic and best effort: a failure is logged, the decision stands.
"""

from __future__ import annotations

import structlog

from wakeful.channels.chat.decisions import standing
from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.telegram.bot_api import BotApi, BotApiError, BotApiUnreachable
from wakeful.channels.telegram.updates import ButtonPress
from wakeful.core.approvals import DecideOutcome
from wakeful.store.base import Cursor

log = structlog.get_logger(__name__)

# answerCallbackQuery shows at most 200 characters.
MAX_ANSWER_CHARS = 200
NOT_YOURS = "Only the owner can decide this."
NOT_OURS = "This button does nothing any more."


class ApprovalButtons:
    """One bot's handling of button presses."""

    def __init__(self, api: BotApi, inbound: ChatInbound) -> None:
        self._api = api
        self._inbound = inbound

    async def pressed(self, press: ButtonPress, cursor: Cursor | None) -> None:
        if press.request is None:
            await self._inbound.advance(cursor)
            await self._answer(press, NOT_OURS)
            return
        result = await self._inbound.press(press.user_id, press.request, cursor=cursor)
        if result is None:
            await self._answer(press, NOT_YOURS)
            return
        await self._answer(press, result.line)
        if result.approval is not None and result.outcome is not DecideOutcome.UNKNOWN:
            await self._show_outcome(press, standing(result.approval))

    async def _answer(self, press: ButtonPress, text: str) -> None:
        params: dict[str, object] = {
            "callback_query_id": press.query_id,
            "text": text[:MAX_ANSWER_CHARS],
        }
        await self._best_effort("answerCallbackQuery", params)

    async def _show_outcome(self, press: ButtonPress, line: str) -> None:
        """The notice's text with the outcome under it, and no buttons any more."""
        if press.chat_id is None or press.message_id is None:
            return  # too old for Telegram to say which message: the answer has to do
        text = f"{press.message_text}\n\n{line}" if press.message_text else line
        params: dict[str, object] = {
            "chat_id": press.chat_id,
            "message_id": press.message_id,
            "text": text[:4096],
            "reply_markup": {"inline_keyboard": []},
        }
        await self._best_effort("editMessageText", params)

    async def _best_effort(self, method: str, params: dict[str, object]) -> None:
        try:
            await self._api.call(method, params)
        except (BotApiError, BotApiUnreachable) as exc:
            log.info("telegram button feedback failed", method=method, error=str(exc))
