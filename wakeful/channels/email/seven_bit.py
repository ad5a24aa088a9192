"""Messages as they go out: RFC 5322 with CRLF, 7-bit clean.

Non-ASCII bodies go quoted-printable or base64 and non-ASCII headers as RFC 2047
encoded words, so a draft's bytes are also its text (the shared outbox stores
text) and any SMTP server takes them, 8BITMIME or not.
"""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage

SEVEN_BIT = policy.SMTP.clone(cte_type="7bit")


def render(msg: EmailMessage) -> bytes:
    """The message as it is sent; ValueError when it cannot be 7-bit clean."""
    for name in ("From", "To", "Cc"):
        for address in getattr(msg[name], "addresses", ()):
            if not address.addr_spec.isascii():  # would need SMTPUTF8 (RFC 6531)
                raise ValueError(
                    f"{address.addr_spec} cannot be sent as 7-bit ASCII: non-ASCII addresses "
                    "are not supported"
                )
    raw = msg.as_bytes()
    if not raw.isascii():  # the policy encodes everything else; a bug if not
        raise ValueError("this message cannot be sent as 7-bit ASCII")
    return raw


def as_text(raw: bytes) -> str:
    """A draft's message as the outbox's text. Drafts from before the one outbox may be
    8-bit (a UTF-8 body sent as is): those are re-encoded 7-bit, the content unchanged."""
    if raw.isascii():
        return raw.decode("ascii")
    message = message_from_bytes(raw, policy=SEVEN_BIT)
    recoded = message.as_bytes()
    if not recoded.isascii():
        raise ValueError("this draft cannot be sent as 7-bit ASCII; draft a new message")
    return recoded.decode("ascii")
