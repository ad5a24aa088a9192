"""Discord's payloads as the chat layer needs them: a message, a button press, buttons.

Shapes (API v10): a ``MESSAGE_CREATE`` dispatch carries a message object
(``id``, ``channel_id``, ``guild_id`` only in a guild, ``author`` with
``id``/``username``/``global_name``/``bot``, ``content``, ``timestamp``,
``type``); a button press is an ``INTERACTION_CREATE`` of type 3
(MESSAGE_COMPONENT) whose ``data.custom_id`` is the button's, pressed by
``member.user`` in a guild or ``user`` in a DM.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wakeful.channels.chat.decisions import Decision, DecisionRequest
from wakeful.channels.chat.inbound import PlatformMessage

# Message types a person writes: DEFAULT and REPLY. Joins, pins, boosts … are not words.
SPOKEN_TYPES = frozenset({0, 19})
# Channel types of threads (announcement, public, private): answered in the thread.
THREAD_TYPES = frozenset({10, 11, 12})
MESSAGE_COMPONENT = 3  # interaction type
BUTTON = 2  # component type
ACTION_ROW = 1
SUCCESS, DANGER = 3, 4  # button styles: green, red
DECISIONS: dict[str, Decision] = {"approve": "approve", "deny": "deny"}


def platform_message(data: dict[str, Any]) -> PlatformMessage | None:
    """A person's message; None for a bot's (ours included), a webhook's or a system message."""
    author = data.get("author")
    if not isinstance(author, dict) or author.get("bot") or data.get("webhook_id"):
        return None
    if data.get("type", 0) not in SPOKEN_TYPES:
        return None
    message_id, channel_id, user_id = data.get("id"), data.get("channel_id"), author.get("id")
    content = data.get("content")
    if not (isinstance(message_id, str) and isinstance(channel_id, str)):
        return None
    if not (isinstance(user_id, str) and isinstance(content, str)):
        return None
    name = author.get("global_name") or author.get("username")
    return PlatformMessage(
        message_id=message_id,
        user_id=user_id,
        user_name=name if isinstance(name, str) else None,
        address=channel_id,  # a thread is a channel: the answer goes into the thread
        text=content,
        occurred_at=_time(data.get("timestamp")),
    )


def is_direct(data: dict[str, Any]) -> bool:
    """A DM: Discord leaves ``guild_id`` out of messages that are not in a guild."""
    return not data.get("guild_id")


@dataclass(frozen=True)
class ButtonPress:
    interaction_id: str
    token: str  # answers this interaction (valid 15 min; the first answer within 3 s)
    user_id: str
    request: DecisionRequest | None  # None: a button that is not (or no longer) ours
    message_content: str  # the notice's text, shown again with the outcome under it


def button_press(data: dict[str, Any]) -> ButtonPress | None:
    """A button press from an INTERACTION_CREATE; None for any other interaction."""
    if data.get("type") != MESSAGE_COMPONENT:
        return None
    inner = data.get("data") or {}
    user = (data.get("member") or {}).get("user") or data.get("user") or {}
    interaction_id, token, user_id = data.get("id"), data.get("token"), user.get("id")
    if not (isinstance(interaction_id, str) and isinstance(token, str)):
        return None
    if not isinstance(user_id, str) or inner.get("component_type") != BUTTON:
        return None
    action, _, approval_id = str(inner.get("custom_id", "")).partition(":")
    decision = DECISIONS.get(action)
    request = DecisionRequest(decision, approval_id) if decision and approval_id else None
    content = (data.get("message") or {}).get("content")
    return ButtonPress(
        interaction_id, token, user_id, request, content if isinstance(content, str) else ""
    )


def approval_components(approval_id: str) -> list[dict[str, Any]]:
    """One action row: Approve (green) and Deny (red), custom_id ``<decision>:<id>``."""
    return [
        {
            "type": ACTION_ROW,
            "components": [
                {"type": BUTTON, "style": SUCCESS, "label": "Approve",
                 "custom_id": f"approve:{approval_id}"},
                {"type": BUTTON, "style": DANGER, "label": "Deny",
                 "custom_id": f"deny:{approval_id}"},
            ],
        }
    ]  # fmt: skip


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
