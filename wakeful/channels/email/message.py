"""One fetched message, parsed into what the agent needs to see and act on."""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import EmailMessage, Message, MIMEPart
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from wakeful.channels.email.htmltext import html_to_text
from wakeful.channels.email.ics import parse_invitation
from wakeful.channels.email.mime_repair import (
    attachment_name,
    decode_text,
    decode_words,
    forwarded_messages,
    parse_repaired,
    raw_header,
)

MAX_FORWARD_DEPTH = 5  # a forward of a forward of ... shown this deep


@dataclass(frozen=True)
class ParsedEmail:
    message_id: str
    subject: str
    sender: str  # the bare address, lower-case
    sender_display: str
    to: list[str]
    cc: list[str]
    # RFC 5322 §3.6.2: where the author wants replies (a list's member, not the list).
    reply_to: list[str]
    date: str | None
    in_reply_to: str
    references: list[str]
    text: str
    attachments: list[dict[str, Any]] = field(default_factory=list)
    invitation: dict[str, Any] | None = None
    # Who vouches for the sender (wakeful/channels/email/authentication.py): the domain
    # of the one From address ("" when there is not exactly one), and each
    # Authentication-Results header's value, top to bottom as the servers prepended them.
    from_domain: str = ""
    authentication_results: list[str] = field(default_factory=list)
    # For each of those headers, how many Received headers sit above it: the receiving
    # server's own stamp is above the Received line it wrote on accepting the mail,
    # and everything the sender wrote is below it.
    received_above: list[int] = field(default_factory=list)

    def headers(self) -> dict[str, Any]:
        return {
            "from": self.sender_display,
            "to": self.to,
            "cc": self.cc,
            "reply_to": self.reply_to,
            "date": self.date,
            "message_id": self.message_id,
            "in_reply_to": self.in_reply_to,
            "references": self.references,
        }

    @property
    def reply_recipients(self) -> list[str]:
        """Who a reply goes to (RFC 5322 §3.6.3): every Reply-To address when the
        mail has one, otherwise its From."""
        if self.reply_to:
            return list(self.reply_to)
        return [self.sender_display] if self.sender else []


def _pairs(msg: Message, name: str) -> list[tuple[str, str]]:
    values = [str(v) for v in msg.get_all(name, [])]
    return [(n, a) for n, a in getaddresses(values) if a]


def _shown(name: str, address: str) -> str:
    """``Name <address>``; a name that could pass for an address is quoted, so
    ``"boss@example.com" <x@evil.test>`` is never shown (or re-read) as the boss."""
    if not name:
        return address
    if any(c in name for c in '@<>,;:"'):
        escaped = name.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}" <{address}>'
    return f"{name} <{address}>"


def _addresses(msg: Message, name: str) -> list[str]:
    return [_shown(n, a) for n, a in _pairs(msg, name)]


def _from_domain(msg: Message) -> str:
    """The From domain, or "" when there is not exactly one From address: a mail with
    two is ambiguous about whose domain was checked, so it vouches for no one."""
    addresses = [a for _, a in _pairs(msg, "From")]
    if len(msg.get_all("From", [])) != 1 or len(addresses) != 1 or addresses[0].count("@") != 1:
        return ""
    return addresses[0].rpartition("@")[2].lower()


def _raw_values(msg: Message, name: str) -> list[str]:
    """Each value of a header as sent, unfolded, top to bottom. Not RFC 2047-decoded:
    an encoded-word is no part of a structured header, and decoding one would let a
    sender hide a forged authserv-id from a server that strips headers naming it."""
    wanted = name.lower()
    return [
        "".join(str(value).splitlines()) for key, value in msg.raw_items() if key.lower() == wanted
    ]


def _received_above(msg: Message, name: str) -> list[int]:
    """For each ``name`` header, top to bottom: how many Received headers are above it."""
    counts: list[int] = []
    received = 0
    for key, _ in msg.raw_items():
        lowered = key.lower()
        if lowered == "received":
            received += 1
        elif lowered == name.lower():
            counts.append(received)
    return counts


def _date(msg: Message) -> str | None:
    raw = msg.get("Date")
    if not raw:
        return None
    try:
        return parsedate_to_datetime(str(raw)).isoformat()
    except (TypeError, ValueError):
        return str(raw)


def _decoded_text(part: MIMEPart) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    return decode_text(payload, part.get_content_charset())


def _own_text(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    text = _decoded_text(part)
    if part.get_content_subtype() == "html":
        return html_to_text(text)
    return text.strip()


def _body(msg: EmailMessage, depth: int = 0) -> str:
    """The message's text, then each forwarded (message/rfc822) message's, so a
    mail that only forwards another does not arrive empty."""
    texts = [_own_text(msg)]
    if depth < MAX_FORWARD_DEPTH:
        for enclosed in forwarded_messages(msg):
            texts.append(_forwarded_block(enclosed, depth + 1))
    return "\n\n".join(text for text in texts if text)


def _forwarded_block(enclosed: EmailMessage, depth: int) -> str:
    lines = ["---------- Forwarded message ----------"]
    for name in ("From", "Date", "Subject", "To"):
        value = enclosed.get(name)
        if value:
            lines.append(f"{name}: {value}")
    return "\n".join(lines) + "\n\n" + _body(enclosed, depth)


def _parts(msg: EmailMessage) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    attachments: list[dict[str, Any]] = []
    invitation: dict[str, Any] | None = None
    for part in msg.walk():
        if part.is_multipart():
            continue
        ctype = part.get_content_type()
        payload = part.get_payload(decode=True)
        size = len(payload) if isinstance(payload, bytes) else 0
        if ctype == "text/calendar" and invitation is None and isinstance(payload, bytes):
            invitation = parse_invitation(payload)
        name = attachment_name(part)
        if name or part.get_content_disposition() == "attachment":
            attachments.append({"name": name, "type": ctype, "size": size})
    return attachments, invitation


def _subject(msg: EmailMessage) -> str:
    raw = raw_header(msg, "Subject")
    if raw is not None and "=?" in raw:
        return decode_words(raw)
    return str(msg.get("Subject", ""))


def parse_email(raw: bytes) -> ParsedEmail:
    msg = parse_repaired(raw)
    senders = _pairs(msg, "From")
    # The address itself, never a re-reading of its display form: a display name
    # such as "boss@example.com" must not become the sender.
    sender_addr = senders[0][1].lower() if senders else ""
    attachments, invitation = _parts(msg)
    return ParsedEmail(
        message_id=str(msg.get("Message-ID", "")).strip(),
        subject=_subject(msg),
        sender=sender_addr,
        sender_display=_shown(*senders[0]) if senders else "",
        to=_addresses(msg, "To"),
        cc=_addresses(msg, "Cc"),
        reply_to=_addresses(msg, "Reply-To"),
        date=_date(msg),
        in_reply_to=str(msg.get("In-Reply-To", "")).strip(),
        references=str(msg.get("References", "")).split(),
        text=_body(msg),
        attachments=attachments,
        invitation=invitation,
        from_domain=_from_domain(msg),
        authentication_results=_raw_values(msg, "Authentication-Results"),
        received_above=_received_above(msg, "Authentication-Results"),
    )


def cap_text(text: str, limit: int, *, email_id: str) -> tuple[str, bool]:
    """The body cut to ``limit`` characters, with a note on how to read the rest."""
    if len(text) <= limit:
        return text, False
    note = (
        f"\n[... body truncated: showing {limit} of {len(text)} characters; read the rest "
        f'with read_email {{"email_id": "{email_id}", "offset": {limit}}}]'
    )
    return text[:limit] + note, True
