"""draft_email and send_email: prepare a message, then send it exactly once via the outbox."""

from __future__ import annotations

from email.header import Header
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses, make_msgid

from pydantic import Field

from wakeful.channels.email.accounts import MailAccount, MailAccounts
from wakeful.channels.email.drafts import Drafts
from wakeful.channels.email.imap import ImapConnection
from wakeful.channels.email.inbound import split_email_id
from wakeful.channels.email.message import ParsedEmail, parse_email
from wakeful.channels.email.seven_bit import SEVEN_BIT, render
from wakeful.channels.email.tools.common import MailToolError, account_for, on_message
from wakeful.channels.email.tools.draft_effect import draft_effect
from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.kernel.events import utcnow
from wakeful.kernel.field_defaults import empty_list


async def _original(accounts: MailAccounts, email_id: str) -> ParsedEmail:
    def fetch(conn: ImapConnection, uid: int) -> bytes:
        return conn.fetch_raw([uid]).get(uid, b"")

    return parse_email(await on_message(accounts, email_id, fetch, readonly=True))


def _build(
    account: MailAccount,
    to: list[str],
    cc: list[str],
    subject: str,
    body: str,
    original: ParsedEmail | None,
) -> EmailMessage:
    msg = EmailMessage(policy=SEVEN_BIT)
    msg["From"] = account.address
    msg["To"] = ", ".join(to)
    if cc:
        msg["Cc"] = ", ".join(cc)
    if subject.isascii():
        msg["Subject"] = subject
    else:
        # Encoded whole, as RFC 2047 words: the policy's own folding drops a space between
        # two encoded words (readers ignore whitespace there), so "¡ ¡" would read "¡¡".
        msg.set_raw("Subject", Header(subject, "utf-8", header_name="Subject").encode())
    msg["Date"] = format_datetime(utcnow())
    domain = account.address.rpartition("@")[2] or "localhost"
    msg["Message-ID"] = make_msgid(domain=domain)
    if original is not None and original.message_id:
        # RFC 5322 §3.6.4: replies thread by In-Reply-To and the parent's References + its id.
        msg["In-Reply-To"] = original.message_id
        msg["References"] = " ".join([*original.references, original.message_id])
    msg.set_content(body)
    return msg


class DraftEmail:
    name = "draft_email"
    group = "email"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Prepare an email (nothing is sent yet): returns a draft id and the rendered message "
        "for review. For a reply pass reply_to_email_id: the recipients default to the "
        "original's Reply-To (else its sender), the subject to 'Re: <original subject>', and "
        "threading headers (In-Reply-To, References) are set so it lands in the same "
        "conversation. Send it with send_email. "
        'Example: {"reply_to_email_id": "imap:work:INBOX:1712345678:42", "body": "Thanks!"}'
    )

    class Args(ToolArgs):
        body: str = Field(min_length=1, description="the plain-text body")
        to: list[str] = Field(default_factory=empty_list, description="recipient addresses")
        cc: list[str] = Field(default_factory=empty_list, description="copy addresses")
        subject: str | None = Field(default=None, description="subject; replies default to Re:")
        reply_to_email_id: str | None = Field(default=None, description="email being answered")
        account: str | None = Field(default=None, description="sending account; default first")

    read_only = False
    effect = Effect.CONTROL  # a local draft: nothing leaves until send_email
    timeout_s: float | None = 60.0

    def __init__(self, accounts: MailAccounts, drafts: Drafts) -> None:
        self._accounts = accounts
        self._drafts = drafts

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        try:
            msg, account = await self._compose(a)
            raw = render(msg)
        except (MailToolError, ValueError) as exc:
            return ToolOutput(str(exc), is_error=True)
        recipients = [addr for _, addr in getaddresses([*a.to, *a.cc] or [str(msg["To"])]) if addr]
        message_id = str(msg["Message-ID"])
        draft_id = await self._drafts.add(account.name, message_id, recipients, raw)
        # Readable, not as sent: headers decoded, the body not quoted-printable.
        rendered = "".join(f"{k}: {v}\n" for k, v in msg.items()) + "\n" + msg.get_content()
        return ToolOutput(
            f"Draft {draft_id} is ready (Message-ID {message_id}); nothing has been sent. To "
            f'send it call send_email {{"draft_id": "{draft_id}"}}.\n--- rendered message ---\n'
            f"{rendered}",
            data={"draft_id": draft_id, "message_id": message_id, "recipients": recipients},
        )

    async def _compose(self, a: DraftEmail.Args) -> tuple[EmailMessage, MailAccount]:
        original = None
        name = a.account
        if a.reply_to_email_id:
            name = name or split_email_id(a.reply_to_email_id)[0]
            original = await _original(self._accounts, a.reply_to_email_id)
        account = account_for(self._accounts, name)
        to = a.to or (original.reply_recipients if original else [])
        if not to:
            raise MailToolError("no recipient: pass `to`, or reply_to_email_id to answer a sender")
        subject = a.subject
        if subject is None:
            base = original.subject if original else ""
            subject = base if base.lower().startswith("re:") else f"Re: {base}".strip()
        return _build(account, to, a.cc, subject, a.body, original), account


class SendEmail:
    name = "send_email"
    group = "email"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Send a draft made by draft_email, exactly once. Sending is not repeatable: calling it "
        "again for a sent draft does nothing and says so; if an earlier attempt was cut off "
        "after the server may have received it, the draft is NOT resent and the result says "
        'the outcome is unknown. Example: {"draft_id": "draft-1a2b3c4d5e6f"}'
    )

    class Args(ToolArgs):
        draft_id: str = Field(min_length=1, description="the id draft_email returned")

    read_only = False
    effect = Effect.SEND
    timeout_s: float | None = 120.0

    def __init__(self, drafts: Drafts) -> None:
        self._drafts = drafts

    async def reach(self, a: Args) -> Reach:
        # The recipients are the draft's: what would really be sent, not what the
        # model says it is sending.
        row = await self._drafts.get(a.draft_id)
        return Reach(recipients=tuple(row.recipients) if row is not None else ())

    async def describe_effect(self, a: Args, ctx: ToolContext) -> str:
        row = await self._drafts.get(a.draft_id)
        if row is None:
            return f"send draft {a.draft_id}: there is no such draft (nothing would be sent)"
        return draft_effect(row)

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        outcome = await self._drafts.send(a.draft_id, ctx.session)
        return ToolOutput(outcome.text, is_error=not outcome.ok, data={"state": outcome.state})
