"""From a fetched message to an ``email.received`` event (whether it is the owner's, and
when it arrived), and the filters before it."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from typing import Any

from wakeful.channels.email.authentication import Verdict, verdict
from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.email.message import ParsedEmail, cap_text
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event, utcnow


def email_id(account: str, mailbox: str, uidvalidity: int, uid: int) -> str:
    return f"imap:{account}:{mailbox}:{uidvalidity}:{uid}"


def split_email_id(value: str) -> tuple[str, str, int, int]:
    """(account, mailbox, uidvalidity, uid) from an id; ValueError naming the expected form."""
    parts = value.split(":")
    try:
        if parts[0] != "imap" or len(parts) < 5:
            raise ValueError
        return parts[1], ":".join(parts[2:-2]), int(parts[-2]), int(parts[-1])
    except ValueError:
        raise ValueError(
            f"{value!r} is not an email id; ids look like 'imap:<account>:<mailbox>:"
            "<uidvalidity>:<uid>' as shown in the email event or by search_email"
        ) from None


def _matches(address: str, patterns: list[str]) -> bool:
    return any(fnmatch(address, p.lower()) for p in patterns)


def skip_reason(account: EmailAccountConfig, mail: ParsedEmail) -> str | None:
    """Why this message must not wake the agent (the configured filters), or None."""
    if account.only_senders and not _matches(mail.sender, account.only_senders):
        return "sender is not in only_senders"
    if _matches(mail.sender, account.ignore_senders):
        return "sender matches ignore_senders"
    for pattern in account.ignore_subjects:
        if re.search(pattern, mail.subject):
            return f"subject matches ignore_subjects {pattern!r}"
    return None


def authentication(account: EmailAccountConfig, mail: ParsedEmail) -> Verdict:
    """What the account's receiving server said about the mail's From domain."""
    return verdict(
        mail.authentication_results,
        account.authserv_id,
        mail.from_domain,
        mail.received_above,
        account.authserv_received_above,
    )


def is_owner(account: EmailAccountConfig, mail: ParsedEmail, checked: Verdict) -> bool:
    """An owner address in From is a claim; it counts once the server vouched for it."""
    listed = mail.sender.lower() in {s.lower() for s in account.owner_senders}
    # the listed address must be the very one whose domain the server checked
    same_domain = mail.sender.rpartition("@")[2] == mail.from_domain
    return listed and same_domain and checked.authenticated


def _readable(event_id: str, mailbox: str, mail: ParsedEmail, body: str, checked: Verdict) -> str:
    lines = [f"Email id: {event_id} (mailbox {mailbox})", f"From: {mail.sender_display}"]
    lines.append(f"Sender authentication: {checked.description}")
    if mail.reply_to:
        lines.append("Reply-To: " + ", ".join(mail.reply_to) + " (draft_email replies go here)")
    if mail.to:
        lines.append("To: " + ", ".join(mail.to))
    if mail.cc:
        lines.append("Cc: " + ", ".join(mail.cc))
    if mail.date:
        # Any sender can write any Date; the event's own time is when the daemon got it.
        lines.append(f"Date (as the sender's mail claims): {mail.date}")
    if mail.in_reply_to:
        lines.append(f"In-Reply-To: {mail.in_reply_to}")
    for item in mail.attachments:
        lines.append(
            f"Attachment: {item['name'] or '(unnamed)'} ({item['type']}, {item['size']} B)"
        )
    if mail.invitation:
        inv = mail.invitation
        lines.append(
            f"Calendar invitation ({inv['method'] or 'no method'}): {inv['summary']!r} "
            f"from {inv['start']} to {inv['end']}, organizer {inv['organizer'] or 'unknown'}"
        )
    return "\n".join(lines) + "\n\n" + body


def build_event(
    account: EmailAccountConfig, mailbox: str, uidvalidity: int, uid: int, mail: ParsedEmail
) -> Event:
    event_id = email_id(account.name, mailbox, uidvalidity, uid)
    body, truncated = cap_text(mail.text, account.body_max_chars, email_id=event_id)
    checked = authentication(account, mail)
    headers = mail.headers()
    data: dict[str, Any] = {
        "account": account.name,
        "mailbox": mailbox,
        "uid": uid,
        "uidvalidity": uidvalidity,
        **{k: v for k, v in headers.items() if k != "date"},
        "date_claimed": headers["date"],
        "authentication": checked.description,
        "attachments": mail.attachments,
        "body_chars": len(mail.text),
        "body_truncated": truncated,
    }
    if mail.invitation:
        data["invitation"] = mail.invitation
    return Event.parse(
        {
            "id": event_id,
            "kind": EventKind.EMAIL_RECEIVED,
            "source": {
                "type": "email",
                "principal": mail.sender or None,
                "trusted": is_owner(account, mail, checked),
            },
            "channel": "imap",
            "content": {
                "text": _readable(event_id, mailbox, mail, body, checked),
                "subject": mail.subject[:4096],
                "data": data,
            },
            "context": {"reply_to": mail.message_id or None},
            "session": account.session,
            # The daemon's receipt time: the sender's Date is only a claim (date_claimed).
            "occurred_at": utcnow(),
        }
    )
