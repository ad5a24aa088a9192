"""Delivers a message to whoever follows the session's stream, and keeps it unread.

A live subscriber sees it at once; the record stays unread in the outbox
until a client acknowledges it, so a reply made while nobody was connected
is shown by the next `wakeful chat` or page load.
"""

from __future__ import annotations

from wakeful.core.feed import Feed
from wakeful.core.outbox.channels import Receipt
from wakeful.core.outbox.targets import LOCAL_CHAT
from wakeful.store.outbox.record import OutgoingMessage


class LocalChat:
    name = LOCAL_CHAT
    resend_safe = False  # a repeat would show twice on a connected client

    def __init__(self, feed: Feed) -> None:
        self._feed = feed

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        item = {"type": "reply", "id": message.id, "text": message.text, "channel": self.name}
        if message.answers is not None:
            item["answers"] = message.answers
        reached = self._feed.publish(message.session, item)
        if reached == 0:
            detail = (
                f"queued for {self.name}; nobody is connected — the user will see it when "
                "they next open a chat"
            )
        else:
            detail = f"delivered to {self.name} ({reached} client{'s' * (reached != 1)} connected)"
        return Receipt(self.name, detail)
