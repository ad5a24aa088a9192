"""The outbox: every message is sent at most once, keyed by its Message-ID.

A row moves pending → sending → sent (the states every outgoing message
shares, :mod:`wakeful.core.outbox.states`). "sending" is committed before the
SMTP conversation starts, so a crash leaves evidence: at the next start (or
the next ``send_email`` of that draft) the row is reconciled by looking for
its Message-ID in the account's Sent folder (servers that file sent mail
themselves), and otherwise marked "unknown" — never sent again blindly.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import structlog

from wakeful.channels.email.accounts import MailAccount, MailAccounts
from wakeful.channels.email.draft_record import OutboxRow
from wakeful.channels.email.imap import ImapConnection, with_mailbox
from wakeful.channels.email.smtp import MaybeSent, NotSent, send_raw
from wakeful.channels.email.state_port import MailState
from wakeful.core.outbox.states import DeliveryState as State
from wakeful.core.outbox.states import check_move, stored_values

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SendOutcome:
    text: str
    ok: bool
    state: State


class Outbox:
    def __init__(self, db: MailState, accounts: MailAccounts) -> None:
        self._db = db
        self._accounts = accounts

    async def add(self, account: str, message_id: str, recipients: list[str], raw: bytes) -> str:
        draft_id = f"draft-{uuid.uuid4().hex[:12]}"
        row = OutboxRow(message_id, draft_id, account, State.PENDING, recipients, raw, "")
        await self._db.add_draft(row, time.time())
        return draft_id

    async def get(self, draft_id: str) -> OutboxRow | None:
        return await self._db.draft(draft_id)

    async def _move(self, row: OutboxRow, old: State, new: State, detail: str) -> bool:
        """Compare-and-set the state; False when another call moved it first."""
        check_move(old, new)
        # stored_values: rows written before the states were shared
        return await self._db.move_draft(row.message_id, stored_values(old), new, detail)

    async def send(self, draft_id: str) -> SendOutcome:
        row = await self.get(draft_id)
        if row is None:
            return SendOutcome(
                f"no draft {draft_id!r}; create one with draft_email and pass the draft id it "
                "returns",
                ok=False,
                state=State.UNKNOWN,
            )
        if row.state is State.SENDING:
            if await self._db.sending_elsewhere(row):
                return SendOutcome(
                    "another daemon is sending this draft right now", False, row.state
                )
            row = await self.reconcile(row)
        if row.state is not State.PENDING:
            return _already(row)
        if not await self._move(row, State.PENDING, State.SENDING, "handing to SMTP"):
            return SendOutcome("another call is sending this draft right now", False, row.state)
        return await self._send_claimed(row)

    async def _send_claimed(self, row: OutboxRow) -> SendOutcome:
        account = self._accounts.get(row.account)
        try:
            reply = await send_raw(
                account.config, account.password, account.address, row.recipients, row.raw
            )
        except NotSent as exc:
            await self._move(row, State.SENDING, State.PENDING, f"not sent: {exc}")
            return SendOutcome(
                f"not sent: {exc}. Nothing left the outbox; fix the cause (recipients, "
                "server) and call send_email again with the same draft id.",
                ok=False,
                state=State.PENDING,
            )
        except MaybeSent as exc:
            await self._move(row, State.SENDING, State.UNKNOWN, f"outcome unknown: {exc}")
            return _already(await self._must_get(row.draft_id))
        await self._move(row, State.SENDING, State.SENT, f"accepted: {reply}")
        log.info("email sent", message_id=row.message_id, account=row.account)
        filed = await self._file_in_sent(account, row)
        return SendOutcome(
            f"sent {row.message_id} to {', '.join(row.recipients)} (server reply: {reply}); "
            f"{filed}",
            ok=True,
            state=State.SENT,
        )

    async def _must_get(self, draft_id: str) -> OutboxRow:
        row = await self.get(draft_id)
        assert row is not None  # rows are never deleted
        return row

    async def _file_in_sent(self, account: MailAccount, row: OutboxRow) -> str:
        sent = account.config.sent_mailbox

        def append(conn: ImapConnection) -> None:
            if not conn.client.folder_exists(sent):
                conn.client.create_folder(sent)
            conn.client.append(sent, row.raw, flags=[b"\\Seen"])

        try:
            await with_mailbox(account.config, account.password, None, append)
        except Exception as exc:  # the mail is sent; only the copy failed
            log.warning("could not file the sent copy", error=f"{type(exc).__name__}: {exc}")
            return f"a copy could NOT be saved in {sent} ({type(exc).__name__})"
        return f"a copy was saved in {sent}"

    async def reconcile(self, row: OutboxRow) -> OutboxRow:
        """Settle a row a crash left "sending": sent if the Sent folder has it, else unknown."""
        account = self._accounts.get(row.account)
        sent = account.config.sent_mailbox

        def look(conn: ImapConnection) -> bool:
            if not conn.client.folder_exists(sent):
                return False
            conn.select(sent)
            return bool(conn.client.search(["HEADER", "Message-ID", row.message_id]))

        try:
            found = await with_mailbox(account.config, account.password, None, look)
        except Exception as exc:  # cannot verify now: stay "sending", try again later
            log.warning("outbox reconcile failed", error=f"{type(exc).__name__}: {exc}")
            return row
        if found:
            await self._move(row, State.SENDING, State.SENT, f"found in {sent} after a restart")
        else:
            detail = (
                "the daemon stopped after handing the message to the SMTP server and before "
                f"recording the answer; it is not in {sent}"
            )
            await self._move(row, State.SENDING, State.UNKNOWN, detail)
        return await self._must_get(row.draft_id)

    async def reconcile_all(self) -> None:
        for row in await self._db.drafts_in(State.SENDING):
            if not await self._db.sending_elsewhere(row):  # a live daemon's send is its own
                await self.reconcile(row)


def _already(row: OutboxRow) -> SendOutcome:
    if row.state is State.SENT:
        return SendOutcome(
            f"{row.message_id} was already sent ({row.detail}); it is not sent again",
            ok=True,
            state=row.state,
        )
    if row.state is State.UNKNOWN:
        return SendOutcome(
            f"the outcome of sending {row.message_id} is UNKNOWN: {row.detail}. It was NOT sent "
            "again, because it may already have been delivered. Verify with the recipient or "
            "in the account's sent mail; if it must go out again, draft a new message.",
            ok=False,
            state=row.state,
        )
    return SendOutcome(
        f"{row.message_id} is still being sent or could not be verified ({row.detail}); "
        "try send_email again later - it will not be sent twice",
        ok=False,
        state=row.state,
    )
