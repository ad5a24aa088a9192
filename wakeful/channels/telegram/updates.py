"""Bot API ``Update`` objects → the shared chat layer's platform messages.

Only text messages from people become messages, and presses of the
Approve/Deny buttons under an approval notice (``callback_query`` updates)
become :class:`ButtonPress`; everything else an update can be (an edit, a
sticker, a bot's own message, a member joining) is skipped, its update id
still counted so the offset moves past it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from wakeful.channels.chat.decisions import DecisionRequest
from wakeful.channels.chat.inbound import PlatformMessage

# What getUpdates and setWebhook ask for: nothing else is used.
ALLOWED_UPDATES = ["message", "callback_query"]


def button_data(decision: str, approval_id: str) -> str:
    """A button's ``callback_data`` (1-64 bytes): ``approve:k3fwz2qp``."""
    return f"{decision}:{approval_id}"


def approval_keyboard(approval_id: str) -> dict[str, Any]:
    """The ``reply_markup`` of an approval notice: one row, Approve and Deny."""
    return {
        "inline_keyboard": [
            [
                {"text": "Approve", "callback_data": button_data("approve", approval_id)},
                {"text": "Deny", "callback_data": button_data("deny", approval_id)},
            ]
        ]
    }


@dataclass(frozen=True)
class ButtonPress:
    """A ``callback_query``: someone pressed a button under one of the bot's messages."""

    query_id: str  # answered with answerCallbackQuery, whatever the outcome
    user_id: str
    request: DecisionRequest | None  # None: not one of our approval buttons
    chat_id: int | None  # the message the button is under, to edit it (absent when
    message_id: int | None  # the message is too old for Telegram to include)
    message_text: str


def button_press(update: dict[str, Any]) -> ButtonPress | None:
    """The callback query in ``update``, or None when it holds none."""
    query = update.get("callback_query")
    if not isinstance(query, dict):
        return None
    sender, query_id = query.get("from"), query.get("id")
    if not isinstance(sender, dict) or "id" not in sender or not isinstance(query_id, str):
        return None
    message = query.get("message")
    chat = message.get("chat") if isinstance(message, dict) else None
    chat_id = chat.get("id") if isinstance(chat, dict) else None
    message_id = message.get("message_id") if isinstance(message, dict) else None
    text = message.get("text") if isinstance(message, dict) else None
    return ButtonPress(
        query_id=query_id,
        user_id=str(sender["id"]),
        request=_request(query.get("data")),
        chat_id=chat_id if isinstance(chat_id, int) else None,
        message_id=message_id if isinstance(message_id, int) else None,
        message_text=text if isinstance(text, str) else "",
    )


def _request(data: Any) -> DecisionRequest | None:
    if not isinstance(data, str):
        return None
    decision, _, approval_id = data.partition(":")
    if decision not in ("approve", "deny") or not approval_id:
        return None
    return DecisionRequest("approve" if decision == "approve" else "deny", approval_id)


def update_id(update: dict[str, Any]) -> int:
    value = update.get("update_id")
    if not isinstance(value, int):
        raise ValueError(f"an Update without an integer update_id: {sorted(update)}")
    return value


def platform_message(update: dict[str, Any]) -> PlatformMessage | None:
    """The text message in ``update``, or None when there is none to answer."""
    message = update.get("message")
    if not isinstance(message, dict):
        return None
    sender, chat = message.get("from"), message.get("chat")
    text = message.get("text") or message.get("caption")
    if not isinstance(sender, dict) or not isinstance(chat, dict) or not isinstance(text, str):
        return None
    if sender.get("is_bot") or "id" not in sender or "id" not in chat:
        return None
    if not isinstance(message.get("message_id"), int):
        return None
    date = message.get("date")
    return PlatformMessage(
        # message_id is unique within its chat for good, while update ids may restart
        # after a quiet week: chat and message id name a message across restarts.
        message_id=f"{chat['id']}:{message.get('message_id')}",
        user_id=str(sender["id"]),
        user_name=sender.get("username") or sender.get("first_name"),
        address=str(chat["id"]),
        text=text,
        occurred_at=datetime.fromtimestamp(date, UTC) if isinstance(date, int) else None,
    )
