"""The e-mail state of before the state port, copied into it once at start.

Until the port, the SQLite backend kept the e-mail state in tables of its own in
``<data_dir>/wakeful.db`` (``email_cursor``, ``email_seen``, and the drafts in
``email_outbox``, its name from when e-mail had an outbox of its own), and so did
the Redis backend before the e-mail state followed ``[store] backend``. Their
rows are copied into the records — what the records already hold for a mailbox
or draft wins (another daemon of the fleet got there first) — and the tables
are emptied, so the copy happens once. Without it, a mailbox with
``initial_sync = "new"`` would start at its newest message and skip the mail
that arrived during the upgrade. (The Redis hashes of before need no copy:
``mail_state.py`` reads them.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import structlog

from wakeful.channels.email.cursor import Cursor
from wakeful.channels.email.draft_record import Draft, legacy_state
from wakeful.channels.email.mail_state import MailState
from wakeful.store.state.old_tables import empty_old_tables, old_rows

log = structlog.get_logger(__name__)

# Each old table, with its columns in the order the copy reads them.
TABLES = {
    "email_cursor": ("account", "mailbox", "uidvalidity", "last_uid", "resync_below"),
    "email_seen": ("account", "mailbox", "message_id", "event_id"),
    "email_outbox": ("message_id", "draft_id", "account", "state", "recipients", "raw", "detail"),
}


async def import_old_tables(state: MailState, path: Path) -> int:
    """Copy the file's old e-mail tables into ``state``; how many cursors and drafts
    were copied (a delivered Message-ID is copied but not counted)."""
    rows = await old_rows(path, TABLES)
    cursors, seen, drafts = (rows[table] for table in TABLES)
    if not (cursors or seen or drafts):
        return 0  # every start after the first: nothing to write
    copied = 0
    for account, mailbox, uidvalidity, last_uid, below in cursors:
        if await state.cursor(account, mailbox) is None:
            await state.set_cursor(account, mailbox, Cursor(uidvalidity, last_uid, below))
            copied += 1
    for account, mailbox, message_id, event_id in seen:
        await state.remember_seen(account, mailbox, message_id, event_id)
    for row in drafts:
        # With the state an older version's own outbox recorded of its send, if any.
        copied += await state.add_draft(_draft(row), 0.0)
    await empty_old_tables(path, list(TABLES))
    log.warning("mail state moved from its old tables into the state records", items=copied)
    return copied


def _draft(row: tuple[Any, ...]) -> Draft:
    message_id, draft_id, account, stored, recipients, raw, detail = row
    blob = bytes(raw) if isinstance(raw, bytes | bytearray | memoryview) else b""
    return Draft(str(message_id), str(draft_id), str(account), list(json.loads(str(recipients))),
                 blob, legacy_state(str(stored)), str(detail or ""))  # fmt: skip
