"""Sending to a Telegram chat: the platform client the shared chat channel delivers through.

Errors are sorted the way the outbox needs them: what may work later (no
answer, 5xx, 429, a bad or revoked token the operator can fix) is
:class:`TryLater`; what never will (the user blocked the bot, the chat does
not exist, any other refused request) is :class:`NeverDeliverable`.
A 429's ``retry_after`` is honoured here: until it has passed, sends fail
fast with TryLater instead of asking Telegram again.
"""

from __future__ import annotations

import time

import structlog

from wakeful.channels.telegram.bot_api import BotApi, BotApiError, BotApiUnreachable
from wakeful.channels.telegram.markdown import to_telegram_html
from wakeful.channels.telegram.updates import approval_keyboard
from wakeful.core.outbox.channels import NeverDeliverable, TryLater

log = structlog.get_logger(__name__)

# sendMessage's limit, counted after entity parsing: Markdown cut at this many
# characters renders to no more visible characters than that.
MAX_MESSAGE_CHARS = 4096
# Revoked (401) or malformed (404) tokens: fixable by the operator, so retried.
FIXABLE_CODES = frozenset({401, 404})


class TelegramClient:
    """``send_text`` / ``send_typing`` for one bot."""

    max_chars = MAX_MESSAGE_CHARS
    resend_safe = False  # the Bot API has no idempotency key: a repeat would post twice

    def __init__(self, api: BotApi) -> None:
        self._api = api
        self._resume_at = 0.0  # monotonic: Telegram's retry_after, not yet passed

    async def send_text(self, address: str, text: str, *, ref: str = "") -> None:
        """``text`` is Markdown of at most ``max_chars``; sent as HTML, as plain text if refused.
        (``ref`` is unused: the Bot API has no idempotency key for sendMessage.)"""
        await self._send_markdown(address, text, markup=None)

    async def send_approval_notice(
        self, address: str, text: str, approval_id: str, *, ref: str = ""
    ) -> None:
        """An approval's notice with an inline keyboard: Approve and Deny."""
        await self._send_markdown(address, text, markup=approval_keyboard(approval_id))

    async def _send_markdown(
        self, address: str, text: str, *, markup: dict[str, object] | None
    ) -> None:
        self._wait_for_rate_limit()
        chat_id = _chat_id(address)
        try:
            try:
                await self._send(chat_id, to_telegram_html(text), parse_mode="HTML", markup=markup)
            except BotApiError as exc:
                if not exc.cannot_parse_entities:
                    raise
                log.info("telegram refused the HTML; sending plain text", error=exc.description)
                await self._send(chat_id, text, parse_mode=None, markup=markup)
        except BotApiUnreachable as exc:
            raise TryLater(f"Telegram did not answer: {exc}") from None
        except BotApiError as exc:
            raise self._sorted(exc) from None

    async def send_typing(self, address: str) -> None:
        """Best effort: "typing…" shows for about 5 s or until the next message."""
        if time.monotonic() < self._resume_at:
            return
        await self._api.call("sendChatAction", {"chat_id": _chat_id(address), "action": "typing"})

    async def _send(
        self,
        chat_id: int | str,
        text: str,
        *,
        parse_mode: str | None,
        markup: dict[str, object] | None = None,
    ) -> None:
        params: dict[str, object] = {"chat_id": chat_id, "text": text}
        if parse_mode is not None:
            params["parse_mode"] = parse_mode
        if markup is not None:
            params["reply_markup"] = markup
        await self._api.call("sendMessage", params)

    def _wait_for_rate_limit(self) -> None:
        left = self._resume_at - time.monotonic()
        if left > 0:
            raise TryLater(f"Telegram asked to wait: retry after {left:.0f} s", retry_after_s=left)

    def _sorted(self, exc: BotApiError) -> TryLater | NeverDeliverable:
        if exc.error_code == 429:
            wait_s = exc.retry_after_s or 1.0
            self._resume_at = time.monotonic() + wait_s
            return TryLater(f"Telegram rate limit: {exc}", retry_after_s=wait_s)
        if exc.error_code >= 500 or exc.error_code in FIXABLE_CODES:
            return TryLater(f"Telegram failed: {exc}")
        return NeverDeliverable(f"Telegram refused the message: {exc}")


def _chat_id(address: str) -> int | str:
    """Chat ids are integers (negative for groups); ``@channelname`` stays a string."""
    try:
        return int(address)
    except ValueError:
        return address
