"""From a signal-cli ``receive`` envelope to what the chat layer takes.

Only a ``dataMessage`` with text or attachments is a message; receipts, typing
notices, sync messages (what the account itself sent from another device),
reactions and edits are not, and only move the cursor.

Who wrote: the ACI (``sourceUuid``) when the envelope has it — it stays when a
number changes, and a number may be hidden by its owner's privacy setting —
unless the owner listed the sender by number, then that number (so
``allowed_users`` may hold either). The message's identity is Signal's own: the
sender and the timestamp the sender gave it, so a message delivered twice is one
event. Attachments arrive as references signal-cli downloaded; the text says
which (type, name, size, id), never their bytes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from wakeful.channels.chat.inbound import PlatformMessage

GROUP_PREFIX = "group:"


@dataclass(frozen=True)
class SignalMessage:
    message: PlatformMessage
    group_id: str | None  # the group it was said in; None for a direct message
    author: str  # whom a read receipt goes to (number or ACI)
    timestamp: int  # the sender's timestamp: a receipt names the message by it


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def attachment_line(attachment: dict[str, Any]) -> str:
    """``[attachment: image/jpeg "cat.jpg", 48213 bytes, id 2J9…]``: what and where, no bytes."""
    parts = [_text(attachment.get("contentType")) or "file"]
    if _text(attachment.get("filename")):
        parts[0] += f' "{attachment["filename"]}"'
    size = attachment.get("size")
    if isinstance(size, int):
        parts.append(f"{size} bytes")
    if _text(attachment.get("id")):
        parts.append(f"id {attachment['id']}")
    return f"[attachment: {', '.join(parts)}]"


def with_mentions(text: str, mentions: Any) -> str:
    """Signal puts U+FFFC where a person is mentioned and lists who in ``mentions``
    (start and length in UTF-16 code units, as the apps count): each becomes @name."""
    if not isinstance(mentions, list) or not text:
        return text
    units = text.encode("utf-16-le")
    spans = [
        (m["start"], m["length"], _text(m.get("name")) or _text(m.get("number")) or "someone")
        for m in mentions
        if isinstance(m, dict)
        and isinstance(m.get("start"), int)
        and isinstance(m.get("length"), int)
    ]
    for start, length, name in sorted(spans, reverse=True):
        if start >= 0 and start + length <= len(units) // 2:
            before, after = units[: 2 * start], units[2 * (start + length) :]
            units = before + f"@{name}".encode("utf-16-le") + after
    return units.decode("utf-16-le", errors="replace")


def identity_of(envelope: dict[str, Any]) -> str | None:
    """The sender as Signal knows them for good: the ACI, else the number (old envelopes)."""
    aci = _text(envelope.get("sourceUuid")).lower()
    return aci or _text(envelope.get("sourceNumber")) or _text(envelope.get("source")) or None


def sender_of(envelope: dict[str, Any], allowed: Collection[str]) -> str | None:
    """The user id wakeful knows the sender by: their number when the owner listed them
    by it, else their identity."""
    number = _text(envelope.get("sourceNumber"))
    if number and number in allowed:
        return number
    return identity_of(envelope)


def parse_envelope(params: dict[str, Any], allowed: Collection[str]) -> SignalMessage | None:
    """The message a ``receive`` event's params carry, or None (nothing to hear)."""
    envelope = params.get("envelope")
    if not isinstance(envelope, dict):
        return None
    data = envelope.get("dataMessage")
    if not isinstance(data, dict):
        return None
    user, identity = sender_of(envelope, allowed), identity_of(envelope)
    timestamp = envelope.get("timestamp")
    if user is None or identity is None or not isinstance(timestamp, int):
        return None
    said = with_mentions(_text(data.get("message")), data.get("mentions"))
    lines = [said] if said else []
    attachments = data.get("attachments")
    if isinstance(attachments, list):
        lines += [attachment_line(a) for a in attachments if isinstance(a, dict)]
    if not lines:
        return None  # a reaction, a sticker, a group update: nothing said
    group = data.get("groupInfo")
    group_id = _text(group.get("groupId")) if isinstance(group, dict) else ""
    address = f"{GROUP_PREFIX}{group_id}" if group_id else user
    message = PlatformMessage(
        message_id=f"{identity}:{timestamp}",  # Signal's identity of a message
        user_id=user,
        user_name=_text(envelope.get("sourceName")) or None,
        address=address,
        text="\n".join(lines),
        occurred_at=datetime.fromtimestamp(timestamp / 1000, UTC),
    )
    return SignalMessage(message, group_id or None, user, timestamp)


def recipient_params(address: str) -> dict[str, Any]:
    """``send``/``sendTyping`` params naming where ``address`` is: a group or a person."""
    if address.startswith(GROUP_PREFIX):
        return {"groupId": address.removeprefix(GROUP_PREFIX)}
    return {"recipient": [address]}
