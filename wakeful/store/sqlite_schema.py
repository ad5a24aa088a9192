"""The SQLite store's schema, its upgrade from older files, and its integrity check."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from wakeful.store.base import StoreCorrupt

SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    strategy TEXT,
    reason TEXT,
    parallel_answer TEXT,
    accepted_at REAL NOT NULL,
    consumed_at REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    failure TEXT
);
CREATE INDEX IF NOT EXISTS events_by_session_status ON events(session, status, seq);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    body TEXT NOT NULL,
    meta TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session, seq);
CREATE TABLE IF NOT EXISTS model_calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    run_id TEXT NOT NULL,
    model TEXT NOT NULL,
    latency_s REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    outcome TEXT NOT NULL,
    created_at REAL NOT NULL,
    source TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS model_calls_by_session ON model_calls(session, seq);
CREATE TABLE IF NOT EXISTS write_probe (filler BLOB);
CREATE TABLE IF NOT EXISTS channel_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
# Columns added after version 1, for files written by an older daemon.
ADDED_EVENT_COLUMNS = {
    "attempts": "attempts INTEGER NOT NULL DEFAULT 0",
    "failure": "failure TEXT",
}


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check`` (a few ms per MB): a corrupt page found now is one
    clear message at start, not a 500 on every later message."""
    problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)").fetchall()]
    if problems != ["ok"]:
        raise corrupt(path, "; ".join(str(p) for p in problems))


# Columns model_calls gained after its first release (usage by source).
ADDED_CALL_COLUMNS = {"source": "source TEXT NOT NULL DEFAULT ''"}


def add_missing_columns(conn: sqlite3.Connection) -> None:
    for table, added in (("events", ADDED_EVENT_COLUMNS), ("model_calls", ADDED_CALL_COLUMNS)):
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})").fetchall()}
        for name, definition in added.items():
            if name not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {definition}")


def is_corruption(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


def corrupt(path: Path, detail: str) -> StoreCorrupt:
    return StoreCorrupt(
        f"the event store {path} is corrupt ({detail[:200]}); stop wakeful, then restore"
        f" {path} from a backup, or salvage it with `sqlite3 {path} .recover | sqlite3"
        f" {path}.recovered` and move the recovered file into its place, or move {path}"
        " aside to start with an empty store"
    )
