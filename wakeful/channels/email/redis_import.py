"""Moving a daemon's mail state from its SQLite file into Redis, once.

Before the mail state followed ``[store] backend = "redis"``, it lived in
``<data_dir>/wakeful.db`` whatever the backend. At start, cursors, delivered
Message-IDs and drafts found there are copied into Redis — what Redis already
holds for a mailbox or draft wins (another daemon got there first) — and then
deleted from the file, so the copy happens once. Without it, a mailbox with
``initial_sync = "new"`` would start at its newest message and skip the mail
that arrived during the upgrade.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio.to_thread
import structlog

from wakeful.channels.email.db import Cursor, MailDb
from wakeful.channels.email.redis_state import RedisMailState

log = structlog.get_logger(__name__)

_TABLES = ("email_cursor", "email_seen", "email_outbox")


def _has_mail_state(path: Path) -> bool:
    if not path.exists():
        return False
    conn = sqlite3.connect(path)
    try:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        return all(table in names for table in _TABLES)
    finally:
        conn.close()


async def import_sqlite_mail_state(path: Path, state: RedisMailState) -> int:
    """Copy the file's mail state into Redis; how many cursors and drafts were copied."""
    if not await anyio.to_thread.run_sync(_has_mail_state, path):
        return 0
    db = MailDb(path)
    try:
        copied = await _copy_cursors(db, state) + await _copy_drafts(db, state)
        await db.run(lambda conn: [conn.execute(f"DELETE FROM {t}") for t in _TABLES])
    finally:
        await db.aclose()
    if copied:
        log.warning("mail state moved from the SQLite file into Redis", items=copied)
    return copied


async def _copy_cursors(db: MailDb, state: RedisMailState) -> int:
    copied = 0
    rows: list[tuple[Any, ...]] = await db.fetch_all(
        "SELECT account, mailbox, uidvalidity, last_uid, resync_below FROM email_cursor"
    )
    for account, mailbox, uidvalidity, last_uid, resync_below in rows:
        if await state.cursor(account, mailbox) is None:
            await state.set_cursor(account, mailbox, Cursor(uidvalidity, last_uid, resync_below))
            copied += 1
    seen = await db.fetch_all("SELECT account, mailbox, message_id, event_id FROM email_seen")
    for account, mailbox, message_id, event_id in seen:
        await state.remember_seen(account, mailbox, message_id, event_id)
    return copied


async def _copy_drafts(db: MailDb, state: RedisMailState) -> int:
    copied = 0
    for row in await db.drafts():  # with what an older version recorded of its send
        if await state.draft(row.draft_id) is None:
            await state.add_draft(row, 0.0)
            copied += 1
    return copied
