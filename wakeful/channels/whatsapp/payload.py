"""A webhook notification's body → the messages and statuses in it.

Meta posts ``{"object": "whatsapp_business_account", "entry": [{"changes":
[{"field": "messages", "value": {...}}]}]}``; a ``value`` has ``metadata``
(the business number it is for), ``contacts`` (the senders' profile names),
``messages`` (what users wrote) and ``statuses`` (what became of ours: sent,
delivered, read, failed). A text is its body; a reply button pressed under an
approval notice is a decision (see :func:`button_id`); other kinds (images,
voice notes, locations, …) become a one-line description, so the agent knows
something arrived that this channel cannot show. A message's id (``wamid.…``)
is unique: it is the event id, so a redelivery is dropped by the store.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from wakeful.channels.chat.decisions import Decision, DecisionRequest
from wakeful.channels.chat.inbound import PlatformMessage

OBJECT = "whatsapp_business_account"
_BUTTON = re.compile(r"^(approve|deny):([a-z2-7]{8})$")
MEDIA = {
    "image": "an image",
    "video": "a video",
    "audio": "a voice message or audio",
    "document": "a document",
    "sticker": "a sticker",
}


class BadPayload(Exception):
    """Not a WhatsApp webhook notification; the message says what is missing."""


@dataclass(frozen=True)
class Inbound:
    """One message a user wrote (or a button they pressed)."""

    message: PlatformMessage
    sent_at: float | None  # the message's timestamp: the 24-hour window starts there
    press: DecisionRequest | None = None  # Approve / Deny under an approval notice


@dataclass(frozen=True)
class Status:
    """What became of a message we sent."""

    message_id: str
    recipient: str
    status: str  # sent | delivered | read | failed | …
    errors: tuple[str, ...] = ()

    @property
    def window_closed(self) -> bool:
        return any(error.startswith("131047") for error in self.errors)


@dataclass
class Notification:
    messages: list[Inbound] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # why, one reason per item left out


def parse_notification(body: bytes, phone_number_id: str) -> Notification:
    """The messages and statuses in ``body`` that are for ``phone_number_id``."""
    try:
        document = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadPayload("the body is not JSON; WhatsApp's webhook posts JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("entry"), list):
        raise BadPayload("the body is not a webhook notification (no `entry` list)")
    found = Notification()
    if document.get("object") != OBJECT:
        found.ignored.append(f"object {document.get('object')!r}")
        return found
    for entry in document["entry"]:
        changes = entry.get("changes") if isinstance(entry, dict) else None
        for change in changes if isinstance(changes, list) else []:
            if not isinstance(change, dict) or not isinstance(change.get("value"), dict):
                raise BadPayload("a change without a `value` object")
            if change.get("field") != "messages":
                found.ignored.append(f"field {change.get('field')!r}")
                continue
            _value(change["value"], phone_number_id, found)
    return found


def _value(value: dict[str, Any], phone_number_id: str, found: Notification) -> None:
    metadata = value.get("metadata") or {}
    number = metadata.get("phone_number_id") if isinstance(metadata, dict) else None
    if number != phone_number_id:  # one app may serve several numbers: not ours
        found.ignored.append(f"phone_number_id {number!r} is another number's")
        return
    names = {
        contact.get("wa_id"): (contact.get("profile") or {}).get("name")
        for contact in _objects(value.get("contacts"))
    }
    for message in _objects(value.get("messages")):
        inbound = parse_message(message, names)
        if isinstance(inbound, str):
            found.ignored.append(inbound)
        else:
            found.messages.append(inbound)
    for status in _objects(value.get("statuses")):
        errors = tuple(
            f"{error.get('code')} {error.get('title') or error.get('message') or ''}".strip()
            for error in _objects(status.get("errors"))
        )
        found.statuses.append(
            Status(
                str(status.get("id", "")),
                str(status.get("recipient_id", "")),
                str(status.get("status", "")),
                errors,
            )
        )


def parse_message(message: dict[str, Any], names: dict[Any, Any]) -> Inbound | str:
    """The message as an :class:`Inbound`, or why it is left out."""
    message_id, sender, kind = message.get("id"), message.get("from"), message.get("type")
    if not (isinstance(message_id, str) and message_id and isinstance(sender, str) and sender):
        return "a message without `id` or `from`"
    if kind == "system":  # "the user changed their number" and the like: no one wrote
        return "a system message"
    press: DecisionRequest | None = None
    if kind == "interactive":
        text, press = _interactive(message.get("interactive"))
    elif kind == "reaction":
        emoji = (message.get("reaction") or {}).get("emoji")
        if not emoji:
            return "a reaction removed"
        text = f"[reacted {emoji} to a message]"
    else:
        text = describe(kind, message)
    name = names.get(sender)
    sent_at = _seconds(message.get("timestamp"))
    return Inbound(
        message=PlatformMessage(
            message_id=message_id,
            user_id=sender,
            user_name=name if isinstance(name, str) and name else None,
            address=sender,
            text=text,
            occurred_at=datetime.fromtimestamp(sent_at, UTC) if sent_at is not None else None,
        ),
        sent_at=sent_at,
        press=press,
    )


def describe(kind: object, message: dict[str, Any]) -> str:
    """What a user wrote, as text; a short description of what text cannot carry."""
    part = message.get(kind) if isinstance(kind, str) else None
    part = part if isinstance(part, dict) else {}
    if kind == "text":
        return str(part.get("body") or "")
    if kind == "button":  # a template's quick-reply button
        return str(part.get("text") or part.get("payload") or "")
    if kind in MEDIA:
        caption = part.get("caption")
        what = MEDIA[str(kind)]
        if isinstance(caption, str) and caption.strip():
            return f"[sent {what}, which this channel cannot show, captioned:] {caption.strip()}"
        return f"[sent {what}, which this channel cannot show]"
    if kind == "location":
        where = ", ".join(
            str(part[key]) for key in ("name", "address", "latitude", "longitude") if part.get(key)
        )
        return f"[shared a location: {where}]"
    if kind == "contacts":
        return "[shared a contact card, which this channel cannot show]"
    return f"[sent a message of type {kind!r}, which this channel cannot show]"


def _interactive(part: object) -> tuple[str, DecisionRequest | None]:
    part = part if isinstance(part, dict) else {}
    reply = part.get("button_reply") or part.get("list_reply") or {}
    reply = reply if isinstance(reply, dict) else {}
    title = str(reply.get("title") or "")
    match = _BUTTON.match(str(reply.get("id") or ""))
    if part.get("type") == "button_reply" and match is not None:
        decision: Decision = "approve" if match.group(1) == "approve" else "deny"
        return title, DecisionRequest(decision, match.group(2))
    return title, None


def _objects(items: object) -> list[dict[str, Any]]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _seconds(stamp: object) -> float | None:
    try:
        return float(str(stamp))
    except ValueError:
        return None
