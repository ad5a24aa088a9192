"""The e-mail state as versions before the state port wrote it, for upgrade tests.

``OLD_SCHEMA`` is the tables of the former ``wakeful/channels/email/db.py`` (the SQLite
backend, and the Redis backend before the e-mail state followed it);
``write_old_redis_*`` write the keys of its ``redis_state.py``.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import redis.asyncio

from tests.redis_server import REDIS_URL

OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS email_cursor (
    account TEXT NOT NULL, mailbox TEXT NOT NULL,
    uidvalidity INTEGER NOT NULL, last_uid INTEGER NOT NULL,
    resync_below INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (account, mailbox));
CREATE TABLE IF NOT EXISTS email_seen (
    account TEXT NOT NULL, mailbox TEXT NOT NULL, message_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (account, mailbox, message_id));
CREATE TABLE IF NOT EXISTS email_outbox (
    message_id TEXT PRIMARY KEY, draft_id TEXT NOT NULL UNIQUE, account TEXT NOT NULL,
    state TEXT NOT NULL, recipients TEXT NOT NULL, raw BLOB NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, detail TEXT NOT NULL DEFAULT '');
"""


def write_old_rows(path: Path, sql: str, *rows: tuple[object, ...]) -> None:
    """Rows into the old tables of ``path`` (created if missing), as that version did."""
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA)
        conn.executemany(sql, rows)
    conn.close()


def write_old_draft_row(
    path: Path, message_id: str, draft_id: str, state: str, raw: bytes, detail: str = ""
) -> None:
    write_old_rows(
        path,
        "INSERT INTO email_outbox (message_id, draft_id, account, state, recipients, raw,"
        " created_at, updated_at, detail) VALUES (?, ?, 'work', ?, '[\"pat@example.test\"]',"
        " ?, 0, 0, ?)",
        (message_id, draft_id, state, raw, detail),
    )


async def write_old_redis_state(prefix: str, drafts: list[dict[str, str]]) -> None:
    """A cursor, a delivered Message-ID and ``drafts`` (message_id, draft_id, state,
    detail, raw) as the Redis e-mail state of before wrote them."""
    client = redis.asyncio.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        cursor = json.dumps({"uidvalidity": 7, "last_uid": 12, "resync_below": 3})
        await client.hset(f"{prefix}email:cursor", "work\nINBOX", cursor)
        await client.hset(f"{prefix}email:seen", "work\nINBOX\n<seen@x>", "email:12")
        for draft in drafts:
            await client.hset(
                f"{prefix}email:draft:{draft['message_id']}",
                mapping={
                    "message_id": draft["message_id"],
                    "draft_id": draft["draft_id"],
                    "account": "work",
                    "state": draft["state"],
                    "recipients": json.dumps(["pat@example.test"]),
                    "raw": base64.b64encode(draft["raw"].encode()).decode(),
                    "detail": draft["detail"],
                    "created_at": "1.0",
                    "updated_at": "1.0",
                },
            )
            await client.hset(f"{prefix}email:draft-id", draft["draft_id"], draft["message_id"])
            if draft["state"]:
                await client.sadd(f"{prefix}email:drafts:{draft['state']}", draft["message_id"])
    finally:
        await client.aclose()
