"""move_email, archive_email and flag_email: change where a message is, or its flags.

All three are idempotent in effect: moving a message that is already gone
says so instead of failing silently, and setting a flag twice is harmless.
"""

from __future__ import annotations

from pydantic import Field

from wakeful.channels.email.accounts import MailAccounts
from wakeful.channels.email.imap import ImapConnection
from wakeful.channels.email.inbound import split_email_id
from wakeful.channels.email.tools.common import MailToolError, account_for, on_message
from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput

ID_FIELD = Field(min_length=1, description="the email's id, e.g. imap:work:INBOX:1712345678:42")


def _move(conn: ImapConnection, uid: int, target: str, create: bool) -> None:
    client = conn.client
    if not client.folder_exists(target):
        if not create:
            raise MailToolError(f"there is no mailbox {target!r}; name an existing folder")
        client.create_folder(target)
    if client.has_capability("MOVE"):
        client.move([uid], target)
    else:  # RFC 6851 is missing: copy, mark deleted, expunge just this UID
        client.copy([uid], target)
        client.delete_messages([uid])
        if client.has_capability("UIDPLUS"):
            client.uid_expunge([uid])
        else:
            client.expunge()


async def move_message(
    accounts: MailAccounts, email_id: str, target: str, *, create: bool
) -> ToolOutput:
    try:
        await on_message(
            accounts, email_id, lambda conn, uid: _move(conn, uid, target, create), readonly=False
        )
    except MailToolError as exc:
        return ToolOutput(str(exc), is_error=True)
    return ToolOutput(
        f"moved {email_id} to {target}; it has a new id there (find it with search_email "
        f'{{"mailbox": "{target}"}})',
        data={"moved_to": target},
    )


class MoveEmail:
    name = "move_email"
    group = "email"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Move one email to another mailbox (folder) of the same account on the server. The "
        "target folder must exist. After the move the old id no longer works. Example: "
        '{"email_id": "imap:work:INBOX:1712345678:42", "mailbox": "Receipts"}'
    )

    class Args(ToolArgs):
        email_id: str = ID_FIELD
        mailbox: str = Field(min_length=1, description="the target folder")

    read_only = False
    effect = Effect.MAILBOX
    timeout_s: float | None = 60.0

    def __init__(self, accounts: MailAccounts) -> None:
        self._accounts = accounts

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        return await move_message(self._accounts, a.email_id, a.mailbox, create=False)


class ArchiveEmail:
    name = "archive_email"
    group = "email"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Archive one email: move it to the account's archive folder (created if missing), out "
        'of the inbox. Example: {"email_id": "imap:work:INBOX:1712345678:42"}'
    )

    class Args(ToolArgs):
        email_id: str = ID_FIELD

    read_only = False
    effect = Effect.MAILBOX
    timeout_s: float | None = 60.0

    def __init__(self, accounts: MailAccounts) -> None:
        self._accounts = accounts

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        try:
            account = account_for(self._accounts, split_email_id(a.email_id)[0])
        except (MailToolError, ValueError) as exc:
            return ToolOutput(str(exc), is_error=True)
        target = account.config.archive_mailbox
        return await move_message(self._accounts, a.email_id, target, create=True)


class FlagEmail:
    name = "flag_email"
    group = "email"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Set (or with remove=true clear) IMAP flags on one email. '\\\\Flagged' marks it "
        "important / high priority (a star in most mail apps); '\\\\Seen' marks it read; "
        "'\\\\Answered' marks it replied. Example: "
        '{"email_id": "imap:work:INBOX:1712345678:42", "flags": ["\\\\Flagged"]}'
    )

    class Args(ToolArgs):
        email_id: str = ID_FIELD
        flags: list[str] = Field(
            default_factory=lambda: ["\\Flagged"], min_length=1, description="flags to change"
        )
        remove: bool = Field(default=False, description="clear the flags instead of setting")

    read_only = False
    effect = Effect.MAILBOX
    timeout_s: float | None = 60.0

    def __init__(self, accounts: MailAccounts) -> None:
        self._accounts = accounts

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        flags = [f.encode() for f in a.flags]

        def change(conn: ImapConnection, uid: int) -> list[str]:
            if a.remove:
                result = conn.client.remove_flags([uid], flags)
            else:
                result = conn.client.add_flags([uid], flags)
            return [f.decode() for f in result.get(uid, ())]

        try:
            now = await on_message(self._accounts, a.email_id, change, readonly=False)
        except MailToolError as exc:
            return ToolOutput(str(exc), is_error=True)
        verb = "cleared" if a.remove else "set"
        return ToolOutput(
            f"{verb} {', '.join(a.flags)} on {a.email_id}; its flags are now: "
            f"{', '.join(now) or '(none)'}",
            data={"flags": now},
        )
