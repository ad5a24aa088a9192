"""A draft's effect for the owner who approves send_email: who gets what, in full.

Read from the draft's own bytes, which are what would go out: the headers the
recipients see, the envelope (so a Bcc, absent from the headers, is shown too),
the text, and each attachment by name, type and size.
"""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import getaddresses

from wakeful.channels.email.draft_record import Draft


def draft_effect(row: Draft) -> str:
    message = message_from_bytes(row.raw, policy=policy.default)
    assert isinstance(message, EmailMessage)  # policy.default builds EmailMessage
    headed = {
        address.lower()
        for _, address in getaddresses(
            [str(v) for k in ("To", "Cc") for v in message.get_all(k, [])]
        )
    }
    bcc = [r for r in row.recipients if r.lower() not in headed]
    lines = [
        f"send this e-mail (draft {row.draft_id}, account {row.account}):",
        f"From: {message.get('From', '')}",
        f"To: {message.get('To', '')}",
    ]
    if message.get("Cc"):
        lines.append(f"Cc: {message.get('Cc')}")
    if bcc:
        lines.append(f"Bcc (not in the headers, sent all the same): {', '.join(bcc)}")
    lines.append(f"Subject: {message.get('Subject', '')}")
    attachments = [
        f"{part.get_filename() or '(unnamed)'} ({part.get_content_type()}, "
        f"{len(part.get_payload(decode=True) or b'')} bytes)"
        for part in message.iter_attachments()
    ]
    if attachments:
        lines.append("Attachments: " + "; ".join(attachments))
    body = message.get_body(preferencelist=("plain", "html"))
    text = body.get_content() if body is not None else ""
    lines += ["", str(text).rstrip("\n")]
    return "\n".join(lines)
