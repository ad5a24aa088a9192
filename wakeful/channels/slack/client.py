"""Slack's Web API, the methods wakeful needs: ``auth.test``, ``chat.postMessage``, and
for approval notices ``chat.update`` and ``chat.postEphemeral``.

Slack answers most failures with HTTP 200 and ``{"ok": false, "error": "..."}``;
:func:`raise_for_answer` sorts them into the outbox's two kinds: try later
(rate limits, Slack's own trouble) or never deliverable (a channel the bot is
not in, a revoked token). The bot token goes only into the Authorization
header, never into a URL, a log line or an error message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from wakeful.channels.slack.blocks import approval_blocks
from wakeful.channels.slack.mrkdwn import escape, to_mrkdwn
from wakeful.core.outbox.channels import NeverDeliverable, TryLater

# Slack truncates a message's text past 40,000 characters, and asks for at most
# 4,000 for readability; 3,900 leaves room for what mrkdwn escaping adds (&amp; …).
MAX_CHARS = 3_900
# Errors that say Slack had trouble, not us: the same call may work later.
TRANSIENT_ERRORS = frozenset(
    {"ratelimited", "rate_limited", "internal_error", "fatal_error", "service_unavailable",
     "request_timeout", "team_added_to_org"}
)  # fmt: skip
TIMEOUT = httpx.Timeout(10.0, connect=5.0)


@dataclass(frozen=True)
class BotIdentity:
    """Who the token is (``auth.test``): the bot's own messages are recognised by these."""

    user_id: str
    bot_id: str | None
    team: str | None


def parse_address(address: str) -> tuple[str, str | None]:
    """``"C123"`` or ``"C123/1700000000.000100"`` → (channel, thread_ts or None)."""
    channel, _, thread_ts = address.partition("/")
    return channel, thread_ts or None


def raise_for_answer(method: str, response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON when ``ok``; else TryLater or NeverDeliverable saying why."""
    if response.status_code == 429:
        wait = _retry_after_s(response)
        shown = "?" if wait is None else f"{wait:g}"
        raise TryLater(
            f"Slack {method}: rate limited (HTTP 429, Retry-After {shown} s)", retry_after_s=wait
        )
    if response.status_code >= 500:
        raise TryLater(f"Slack {method}: HTTP {response.status_code}")
    try:
        answer = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        answer = None
    if not isinstance(answer, dict):
        raise TryLater(f"Slack {method}: HTTP {response.status_code} without a JSON answer")
    if answer.get("ok") is True:
        return answer
    error = str(answer.get("error") or f"HTTP {response.status_code}")
    if error in TRANSIENT_ERRORS:
        raise TryLater(f"Slack {method}: {error}")
    raise NeverDeliverable(f"Slack {method}: {error}")


def _retry_after_s(response: httpx.Response) -> float | None:
    """Slack's Retry-After: whole seconds to wait before calling the method again."""
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


class SlackClient:
    """A :class:`PlatformClient` for one Slack app (one bot token)."""

    max_chars = MAX_CHARS
    resend_safe = False  # chat.postMessage has no idempotency key: a repeat would post twice

    def __init__(self, api_base: str, token: str, http: httpx.AsyncClient) -> None:
        self._base = api_base.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._http = http

    async def call(self, method: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body to ``method``; TryLater on network trouble, see raise_for_answer."""
        try:
            response = await self._http.post(
                f"{self._base}/{method}", json=payload, headers=self._headers, timeout=TIMEOUT
            )
        except httpx.HTTPError as exc:
            # The exception's text names the URL only: the token is in a header.
            raise TryLater(f"Slack {method}: {type(exc).__name__}: {exc}") from None
        return raise_for_answer(method, response)

    async def auth_test(self) -> BotIdentity:
        answer = await self.call("auth.test", {})
        return BotIdentity(str(answer.get("user_id", "")), answer.get("bot_id"), answer.get("team"))

    async def send_text(self, address: str, text: str, *, ref: str = "") -> None:
        """Post ``text`` (Markdown) as mrkdwn. ``ref`` is unused: chat.postMessage
        takes no idempotency key, so exactly-once rests on the outbox alone."""
        channel, thread_ts = parse_address(address)
        payload: dict[str, Any] = {"channel": channel, "text": to_mrkdwn(text), "mrkdwn": True}
        if thread_ts is not None:
            payload["thread_ts"] = thread_ts
        await self.call("chat.postMessage", payload)

    async def send_approval_notice(
        self, address: str, text: str, approval_id: str, *, ref: str = ""
    ) -> None:
        """The notice as Block Kit with Approve/Deny buttons; ``text`` stays the fallback
        (notifications, clients without blocks)."""
        channel, thread_ts = parse_address(address)
        mrkdwn = to_mrkdwn(text)
        payload: dict[str, Any] = {
            "channel": channel,
            "text": mrkdwn,
            "blocks": approval_blocks(mrkdwn, approval_id),
        }
        if thread_ts is not None:
            payload["thread_ts"] = thread_ts
        await self.call("chat.postMessage", payload)

    async def update_message(
        self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]
    ) -> None:
        """Rewrite the bot's message ``ts`` in ``channel`` (``chat.update``)."""
        payload = {"channel": channel, "ts": ts, "text": text, "blocks": blocks}
        await self.call("chat.update", payload)

    async def post_ephemeral(
        self, channel: str, user: str, text: str, thread_ts: str | None = None
    ) -> None:
        """A message only ``user`` sees, in ``channel`` (``chat.postEphemeral``)."""
        payload: dict[str, Any] = {"channel": channel, "user": user, "text": escape(text)}
        if thread_ts is not None:
            payload["thread_ts"] = thread_ts
        await self.call("chat.postEphemeral", payload)

    async def send_typing(self, address: str) -> None:
        """Nothing: the Events API gives classic bot apps no typing indicator.

        (The RTM API had one; Slack's newer "assistant" apps set a thread status
        with ``assistant.threads.setStatus``, which ordinary bots cannot call.)
        """
