"""Sending one message through SMTP, telling "surely not sent" from "maybe sent".

Everything up to and including RCPT can fail without the message leaving;
once DATA has started, a lost connection leaves the outcome unknown, and
only a definite SMTP reply (a 4xx/5xx to DATA) proves it was refused.
"""

from __future__ import annotations

import aiosmtplib

from wakeful.channels.email.config import EmailAccountConfig


class NotSent(Exception):
    """The server surely did not accept the message. ``permanent``: the server said no
    for good (a 5xx reply, or no SMTP server configured); else it may work later (the
    server unreachable, a 4xx reply)."""

    def __init__(self, reason: str, *, permanent: bool = False) -> None:
        super().__init__(reason)
        self.permanent = permanent


class MaybeSent(Exception):
    """The connection failed during DATA: the outcome is unknown; never resend blindly."""


async def _prepare(
    account: EmailAccountConfig, password: str, sender: str, recipients: list[str]
) -> aiosmtplib.SMTP:
    if not account.smtp_host:
        raise NotSent(f"email account {account.name} has no smtp_host configured", permanent=True)
    smtp = aiosmtplib.SMTP(
        hostname=account.smtp_host,
        port=account.smtp_port,
        use_tls=account.smtp_security == "tls",
        start_tls=account.smtp_security == "starttls",
        timeout=account.timeout_s,
    )
    try:
        await smtp.connect()
        if smtp.supports_extension("auth"):
            await smtp.login(account.username, password)
        await smtp.mail(sender)
        for rcpt in recipients:
            await smtp.rcpt(rcpt)
    except (aiosmtplib.SMTPException, OSError) as exc:
        smtp.close()
        raise NotSent(f"{type(exc).__name__}: {exc}", permanent=_permanent(exc)) from None
    return smtp


def _permanent(exc: Exception) -> bool:
    """RFC 5321 §4.2.1: a 5yz reply is a permanent failure; 4yz and no reply are not."""
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        return all(refusal.code >= 500 for refusal in exc.recipients)
    return isinstance(exc, aiosmtplib.SMTPResponseException) and exc.code >= 500


async def send_raw(
    account: EmailAccountConfig, password: str, sender: str, recipients: list[str], raw: bytes
) -> str:
    """Send ``raw``; returns the server's final reply. Raises NotSent or MaybeSent."""
    smtp = await _prepare(account, password, sender, recipients)
    try:
        response = await smtp.data(raw)
    except aiosmtplib.SMTPResponseException as exc:
        smtp.close()
        refused = f"the SMTP server refused the message: {exc.code} {exc.message}"
        raise NotSent(refused, permanent=_permanent(exc)) from None
    except (aiosmtplib.SMTPException, OSError) as exc:
        smtp.close()
        raise MaybeSent(f"{type(exc).__name__}: {exc}") from None
    try:
        await smtp.quit()
    except (aiosmtplib.SMTPException, OSError):
        smtp.close()  # accepted already; a failed QUIT changes nothing
    return f"{response.code} {response.message}"
