"""What the email tools share: finding a message by its id on the server."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from imapclient.exceptions import IMAPClientError

from wakeful.channels.email.accounts import MailAccount, MailAccounts
from wakeful.channels.email.imap import AuthFailed, ImapConnection, with_mailbox
from wakeful.channels.email.inbound import split_email_id

T = TypeVar("T")


class MailToolError(Exception):
    """A failure the model can act on; the message says what to do."""


def account_for(accounts: MailAccounts, name: str | None) -> MailAccount:
    try:
        return accounts.get(name)
    except KeyError as exc:
        raise MailToolError(str(exc.args[0])) from None


async def on_server(account: MailAccount, work: Callable[[ImapConnection], T]) -> T:
    """Run ``work`` on a fresh connection; server failures become MailToolError."""
    try:
        return await with_mailbox(account.config, account.password, None, work)
    except MailToolError:
        raise
    except AuthFailed as exc:
        raise MailToolError(f"{exc}; tell the user to check the account's password") from None
    except (IMAPClientError, OSError) as exc:
        raise MailToolError(
            f"the IMAP server of account {account.name} failed: {type(exc).__name__}: {exc}. "
            "It may be temporarily unreachable; try again in a minute."
        ) from None


async def on_message(
    accounts: MailAccounts,
    email_id: str,
    work: Callable[[ImapConnection, int], T],
    *,
    readonly: bool,
) -> T:
    """Select the message's mailbox, check its UIDVALIDITY, then ``work(conn, uid)``."""
    try:
        name, mailbox, uidvalidity, uid = split_email_id(email_id)
    except ValueError as exc:
        raise MailToolError(str(exc)) from None
    account = account_for(accounts, name)

    def checked(conn: ImapConnection) -> T:
        current, _ = conn.select(mailbox, readonly=readonly)
        if current != uidvalidity:
            raise MailToolError(
                f"mailbox {mailbox} was renumbered (UIDVALIDITY {uidvalidity} → {current}), so "
                f"{email_id} no longer names a message; find it again with search_email"
            )
        if not conn.client.search(["UID", str(uid)]):
            raise MailToolError(
                f"{email_id} is no longer in {mailbox} (moved, archived or deleted); "
                "find it with search_email"
            )
        return work(conn, uid)

    return await on_server(account, checked)
