"""An Events API request body → what to do with it.

Slack posts JSON envelopes: ``url_verification`` (answer the challenge),
``event_callback`` (one event) and ``app_rate_limited`` (a notice). Only what
a person wrote to the bot becomes a :class:`PlatformMessage`: a ``message``
(DMs, channels the bot reads) or an ``app_mention``; edits, joins and every
bot's messages — the bot's own replies included — are ignored with a reason.

A message is known by its conversation and timestamp (``<channel>:<ts>``,
unique in a workspace), not by the envelope's ``event_id``: Slack's retries
carry the same of both, but a mention in a channel the bot also reads comes
as two events (``message`` and ``app_mention``) with two ``event_id``s and
one ``ts`` — and must be answered once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from wakeful.channels.chat.inbound import PlatformMessage
from wakeful.channels.slack.mrkdwn import to_plain

# Message subtypes that are still a person writing (others: edits, joins, bots, …).
USER_SUBTYPES = frozenset({"thread_broadcast", "file_share", "me_message"})
_LEADING_MENTION = re.compile(r"^\s*<@[A-Z0-9]+(?:\|[^>]*)?>[\s,:]*")


class BadEnvelope(Exception):
    """The body is not an Events API envelope; the message says what is missing."""


@dataclass(frozen=True)
class UrlVerification:
    challenge: str


@dataclass(frozen=True)
class Ignored:
    reason: str  # e.g. "a bot's message"
    warn: bool = False  # worth the operator's attention (Slack dropped events)


Parsed = UrlVerification | Ignored | PlatformMessage


def parse_body(body: bytes, bot_user_id: str | None) -> Parsed:
    """What ``body`` asks for; ``bot_user_id`` (from ``auth.test``) marks the bot's own messages."""
    try:
        envelope = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadEnvelope("the body is not JSON; Slack's Events API posts JSON") from None
    if not isinstance(envelope, dict):
        raise BadEnvelope("the body is not a JSON object")
    kind = envelope.get("type")
    if kind == "url_verification":
        challenge = envelope.get("challenge")
        if not isinstance(challenge, str):
            raise BadEnvelope("a url_verification without a string `challenge`")
        return UrlVerification(challenge)
    if kind == "app_rate_limited":
        # Slack stops sending events for a minute when an app gets more than 30,000 an hour.
        return Ignored("Slack rate-limited this app's events (app_rate_limited)", warn=True)
    if kind != "event_callback":
        return Ignored(f"envelope type {kind!r}")
    event_id, event = envelope.get("event_id"), envelope.get("event")
    if not isinstance(event_id, str) or not event_id or not isinstance(event, dict):
        raise BadEnvelope("an event_callback needs `event_id` (a string) and `event` (an object)")
    return parse_event(event, bot_user_id)


def parse_event(event: dict[str, Any], bot_user_id: str | None) -> Parsed:
    kind = event.get("type")
    if kind not in ("message", "app_mention"):
        return Ignored(f"event type {kind!r}")
    why = _not_a_person(event, bot_user_id)
    if why is not None:
        return Ignored(why)
    user, channel, ts, text = (_string(event, key) for key in ("user", "channel", "ts", "text"))
    if not (user and channel and ts):
        return Ignored("a message without user, channel or ts")
    # Addressing the bot is not part of what was said: whichever of a mention's two
    # events comes first, the agent reads the same text.
    if kind == "app_mention" or (bot_user_id and text.lstrip().startswith(f"<@{bot_user_id}")):
        text = _LEADING_MENTION.sub("", text)
    return PlatformMessage(
        message_id=f"{channel}:{ts}",
        user_id=user,
        user_name=None,
        address=reply_address(event, channel, ts),
        text=to_plain(text).strip(),
        occurred_at=_occurred_at(ts),
    )


def _string(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    return value if isinstance(value, str) else ""


def _not_a_person(event: dict[str, Any], bot_user_id: str | None) -> str | None:
    if event.get("bot_id") or event.get("bot_profile"):
        return "a bot's message"
    subtype = event.get("subtype")
    if subtype is not None and subtype not in USER_SUBTYPES:
        return f"message subtype {subtype!r}"
    if bot_user_id is not None and event.get("user") == bot_user_id:
        return "the bot's own message"
    return None


def reply_address(event: dict[str, Any], channel: str, ts: str) -> str:
    """Reply in the thread the person wrote in; in a DM, in the conversation itself."""
    thread_ts = event.get("thread_ts")
    if isinstance(thread_ts, str) and thread_ts:
        return f"{channel}/{thread_ts}"
    if event.get("channel_type") == "im":
        return channel
    return f"{channel}/{ts}"  # a channel message starts a thread under it


def _occurred_at(ts: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(ts), UTC)
    except (ValueError, OverflowError, OSError):
        return None
