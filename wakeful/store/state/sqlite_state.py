"""The state port in the daemon's SQLite file: a table beside the event store's.

Every call runs on the store's one connection and worker thread, in its own
transaction (``SqliteStore._transaction``), so a compare-and-set reads and
writes with nothing in between. One process owns a data directory (its
``wakeful.lock``), so a named lease is always this process's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from wakeful.store.state.port import check_namespace

if TYPE_CHECKING:  # the store hands this backend out: it imports this module
    from wakeful.store.sqlite import SqliteStore

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS state_records (
    namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (namespace, key)) WITHOUT ROWID
"""


class SqliteState:
    """``StatePort`` on a ``SqliteStore``'s connection (table ``state_records``)."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self._created = False

    def records(self, namespace: str) -> SqliteRecords:
        return SqliteRecords(self, check_namespace(namespace))

    async def old_hash(self, name: str) -> dict[str, str]:
        return {}

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        created = self._created

        def in_table(conn: sqlite3.Connection) -> T:
            if not created:  # a file written before the port, or a new one
                conn.execute(SCHEMA)
            return fn(conn)

        result = await self._store._transaction(in_table)
        self._created = True
        return result


class SqliteRecords:
    def __init__(self, state: SqliteState, namespace: str) -> None:
        self._state = state
        self._namespace = namespace

    async def get(self, key: str) -> str | None:
        return await self._state.run(lambda conn: _get(conn, self._namespace, key))

    async def put(self, key: str, value: str | None) -> None:
        await self._state.run(lambda conn: _put(conn, self._namespace, key, value))

    async def put_if(self, key: str, expected: str | None, value: str | None) -> bool:
        def swap(conn: sqlite3.Connection) -> bool:
            if _get(conn, self._namespace, key) != expected:
                return False
            _put(conn, self._namespace, key, value)
            return True

        return await self._state.run(swap)


def _get(conn: sqlite3.Connection, namespace: str, key: str) -> str | None:
    row = conn.execute(
        "SELECT value FROM state_records WHERE namespace = ? AND key = ?", (namespace, key)
    ).fetchone()
    return None if row is None else str(row[0])


def _put(conn: sqlite3.Connection, namespace: str, key: str, value: str | None) -> None:
    if value is None:
        conn.execute("DELETE FROM state_records WHERE namespace = ? AND key = ?", (namespace, key))
        return
    conn.execute(
        "INSERT INTO state_records (namespace, key, value) VALUES (?, ?, ?)"
        " ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value",
        (namespace, key, value),
    )
