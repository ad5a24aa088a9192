"""Tables an older version kept in ``<data_dir>/wakeful.db``, read once by their owner.

Before the state port, components kept their state in tables of their own
(e-mail: ``email_cursor``, ``email_seen``, ``email_outbox``), in the SQLite
file whatever the backend. A component copies their rows into its records at
start (what the records already hold wins), then empties the tables, so the
copy happens once whichever backend it runs on now.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread


async def old_rows(
    path: Path, tables: Mapping[str, Sequence[str]]
) -> dict[str, list[tuple[Any, ...]]]:
    """Each table's rows, its columns in the order given ([] for a table or file that is
    not there), read on one connection."""
    return await anyio.to_thread.run_sync(_read, path, tables)


async def empty_old_tables(path: Path, tables: Sequence[str]) -> None:
    """Delete every row of ``tables`` (those present), in one transaction."""
    await anyio.to_thread.run_sync(_empty, path, tables)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA busy_timeout=10000")  # the event store may be writing the same file
    return conn


def _present(conn: sqlite3.Connection) -> set[str]:
    return {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}


def _read(path: Path, tables: Mapping[str, Sequence[str]]) -> dict[str, list[tuple[Any, ...]]]:
    rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in tables}
    if not path.exists():
        return rows
    conn = _connect(path)
    try:
        present = _present(conn)
        for table, columns in tables.items():
            if table in present:
                rows[table] = conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
        return rows
    finally:
        conn.close()


def _empty(path: Path, tables: Sequence[str]) -> None:
    if not path.exists():
        return
    conn = _connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        present = _present(conn)
        for table in tables:
            if table in present:
                conn.execute(f"DELETE FROM {table}")
        conn.execute("COMMIT")
    finally:
        conn.close()
