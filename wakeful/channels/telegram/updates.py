"""Bot API ``Update`` objects → the shared chat layer's platform messages.

Only text messages from people become messages; everything else an update
can be (an edit, a sticker, a bot's own message, a member joining) is
skipped, its update id still counted so the offset moves past it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from wakeful.channels.chat.inbound import PlatformMessage

# What getUpdates and setWebhook ask for: nothing else is used.
ALLOWED_UPDATES = ["message"]


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
