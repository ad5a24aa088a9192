"""The account's Sent folder: where a sent message is filed, and where a send a crash
cut off is looked for (servers that file sent mail themselves keep it there)."""

from __future__ import annotations

import structlog

from wakeful.channels.email.accounts import MailAccount
from wakeful.channels.email.imap import ImapConnection, with_mailbox

log = structlog.get_logger(__name__)


async def file_in_sent(account: MailAccount, raw: bytes) -> str:
    """Append ``raw`` to the Sent folder; says whether it worked (the mail is sent either way)."""
    sent = account.config.sent_mailbox

    def append(conn: ImapConnection) -> None:
        if not conn.client.folder_exists(sent):
            conn.client.create_folder(sent)
        conn.client.append(sent, raw, flags=[b"\\Seen"])

    try:
        await with_mailbox(account.config, account.password, None, append)
    except Exception as exc:  # the mail is sent; only the copy failed
        log.warning("could not file the sent copy", error=f"{type(exc).__name__}: {exc}")
        return f"a copy could NOT be saved in {sent} ({type(exc).__name__})"
    return f"a copy was saved in {sent}"


async def in_sent_folder(account: MailAccount, message_id: str) -> bool | None:
    """Whether the Sent folder holds ``message_id``; None when the server cannot be asked."""
    sent = account.config.sent_mailbox

    def look(conn: ImapConnection) -> bool:
        if not conn.client.folder_exists(sent):
            return False
        conn.select(sent)
        return bool(conn.client.search(["HEADER", "Message-ID", message_id]))

    try:
        return await with_mailbox(account.config, account.password, None, look)
    except Exception as exc:  # cannot verify now: asked again later
        log.warning("cannot search the Sent folder", error=f"{type(exc).__name__}: {exc}")
        return None
