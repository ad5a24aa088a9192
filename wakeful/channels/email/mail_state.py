"""What the email channel keeps between restarts, in the store's state port.

Per mailbox the cursor and the Message-IDs delivered (for a UIDVALIDITY
resync), and the drafts of ``draft_email`` (their sending is the shared
outbox's). Records, each a string, in four namespaces:

- ``email:cursor``: ``<account>\\n<mailbox>`` → the cursor as JSON;
- ``email:seen``: ``<account>\\n<mailbox>\\n<Message-ID>`` → the event id;
- ``email:drafts``: Message-ID → the draft as JSON (its raw message in base64);
- ``email:draft-id``: draft id → Message-ID.

With Redis these are the hashes ``<prefix>email:cursor`` etc. that the e-mail
state kept before the port, read as they are; a draft written then (a hash of
its own, ``email:draft:<Message-ID>``) is read through ``old_hash`` and copied
on first read. Rows of the SQLite tables of before are copied at start
(``old_state.py``).

A cursor only moves forward: ``advance`` is a compare-and-set that ignores a
cursor older than the stored one, so a watcher that lost its mailbox's lease
(and is about to stop) cannot move the cursor back under its successor; at
worst its successor fetches a message again, whose event id the store
deduplicates.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping

from wakeful.channels.email.cursor import Cursor
from wakeful.channels.email.draft_record import Draft, legacy_state
from wakeful.store.outbox.states import DeliveryState
from wakeful.store.state.port import StatePort


class MailState:
    """Cursors, delivered Message-IDs and drafts, on either backend."""

    def __init__(self, state: StatePort) -> None:
        self._state = state
        self._cursors = state.records("email:cursor")
        self._seen = state.records("email:seen")
        self._drafts = state.records("email:drafts")
        self._draft_ids = state.records("email:draft-id")

    # --- the inbound cursor ------------------------------------------------

    async def cursor(self, account: str, mailbox: str) -> Cursor | None:
        raw = await self._cursors.get(_mailbox(account, mailbox))
        return None if raw is None else _cursor(raw)

    async def set_cursor(self, account: str, mailbox: str, cursor: Cursor) -> None:
        await self._cursors.put(_mailbox(account, mailbox), _cursor_json(cursor))

    async def advance(
        self, account: str, mailbox: str, cursor: Cursor, message_id: str, event_id: str
    ) -> None:
        """Record one delivered (or deliberately skipped) message.

        The Message-ID first, then the cursor: a crash in between leaves the cursor
        before the message, which is fetched again and deduplicated by its event id."""
        if message_id:
            await self.remember_seen(account, mailbox, message_id, event_id)
        key, new = _mailbox(account, mailbox), _cursor_json(cursor)
        while True:
            raw = await self._cursors.get(key)
            if raw is not None:
                stored = _cursor(raw)
                if stored.uidvalidity != cursor.uidvalidity or stored.last_uid >= cursor.last_uid:
                    return  # a stale writer (another watcher moved on, or a resync began)
            if await self._cursors.put_if(key, raw, new):
                return

    async def seen(self, account: str, mailbox: str, message_id: str) -> str | None:
        """The event id a message with this Message-ID was delivered as, if any."""
        return await self._seen.get(f"{_mailbox(account, mailbox)}\n{message_id}")

    async def remember_seen(
        self, account: str, mailbox: str, message_id: str, event_id: str
    ) -> None:
        """Record a delivered Message-ID (the first event id recorded stays)."""
        await self._seen.put_if(f"{_mailbox(account, mailbox)}\n{message_id}", None, event_id)

    # --- the drafts --------------------------------------------------------

    async def add_draft(self, row: Draft, now: float) -> bool:
        """Keep a draft; False (and nothing written) if its Message-ID is kept already."""
        if not await self._drafts.put_if(row.message_id, None, _draft_json(row, now, now)):
            return False
        await self._draft_ids.put(row.draft_id, row.message_id)
        return True

    async def draft(self, draft_or_message_id: str) -> Draft | None:
        message_id = await self._draft_ids.get(draft_or_message_id) or draft_or_message_id
        raw = await self._drafts.get(message_id)
        if raw is not None:
            return _draft(message_id, json.loads(raw))
        return await self._old_redis_draft(message_id)

    async def settle_legacy(self, message_id: str, new: DeliveryState, detail: str) -> bool:
        """Settle a draft an older version left ``sending`` (compare-and-set on that
        state): False when it was not ``sending`` any more."""
        if await self.draft(message_id) is None:
            return False
        raw = await self._drafts.get(message_id)
        if raw is None:
            return False
        fields = json.loads(raw)
        if fields["state"] != DeliveryState.SENDING.value:
            return False
        settled = {**fields, "state": new.value, "detail": detail, "updated_at": time.time()}
        return await self._drafts.put_if(message_id, raw, json.dumps(settled))

    async def _old_redis_draft(self, message_id: str) -> Draft | None:
        """A draft the Redis e-mail state kept before the port, copied on first read."""
        fields = await self._state.old_hash(f"email:draft:{message_id}")
        if not fields:
            return None
        try:
            row = _draft(message_id, {**fields, "recipients": json.loads(fields["recipients"])})
        except (KeyError, ValueError, binascii.Error):
            return None  # not a draft this code ever wrote
        await self.add_draft(row, float(fields.get("created_at") or 0.0))
        return row


def _mailbox(account: str, mailbox: str) -> str:
    return f"{account}\n{mailbox}"


def _cursor(raw: str) -> Cursor:
    fields = json.loads(raw)
    return Cursor(int(fields["uidvalidity"]), int(fields["last_uid"]), int(fields["resync_below"]))


def _cursor_json(cursor: Cursor) -> str:
    return json.dumps(
        {
            "uidvalidity": cursor.uidvalidity,
            "last_uid": cursor.last_uid,
            "resync_below": cursor.resync_below,
        }
    )


def _draft_json(row: Draft, created_at: float, updated_at: float) -> str:
    return json.dumps(
        {
            "draft_id": row.draft_id,
            "account": row.account,
            "recipients": row.recipients,
            "raw": base64.b64encode(row.raw).decode(),
            "state": row.stored_state,
            "detail": row.legacy_detail,
            "created_at": created_at,
            "updated_at": updated_at,
        }
    )


def _draft(message_id: str, fields: Mapping[str, object]) -> Draft:
    recipients = fields["recipients"]
    return Draft(
        message_id,
        str(fields["draft_id"]),
        str(fields["account"]),
        [str(r) for r in recipients] if isinstance(recipients, list) else [],
        base64.b64decode(str(fields["raw"])),
        legacy_state(str(fields["state"])),
        str(fields["detail"]),
    )
