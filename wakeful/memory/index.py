"""The search index over the memory files and past conversations: SQLite FTS5, BM25
ranked. Derived and disposable (delete the file and it is built again): each search
first reads what changed — a memory file whose size or time changed, the messages a
session added since the last search (the stored trajectory keeps every message,
compactions only change what a request carries)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wakeful.memory.files import REVIEW_FILE, MemoryFiles, day_of

MAX_MESSAGE_CHARS = 4000  # of a conversation message, indexed and shown
_WORD = re.compile(r"\w+", re.UNICODE)
_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
    text, source UNINDEXED, ref UNINDEXED, day UNINDEXED, trusted UNINDEXED,
    tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS synced (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
"""
# Every event rendered into the trajectory starts with its time (rendering.time_note).
_DAY_NOTE = re.compile(r"\[(\d{4}-\d{2}-\d{2}) \d{2}:\d{2}:\d{2} UTC")


@dataclass(frozen=True)
class Hit:
    source: str  # "MEMORY.md", "memory/2026-12-03.md", "session main, message 12"
    ref: str  # the entry's id, or the message's position
    day: str | None
    text: str
    trusted: bool  # the owner's or the agent's own words; else quoted as third-party data


Message = dict[str, Any]


def message_text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def owner_typed(message: Message) -> bool:
    """A user message that holds only what the authenticated owner typed ("The user
    says: …"); anything rendered from someone else (an e-mail, a webhook, a stranger on
    a chat) carries the untrusted wrapper or names the sender as not the owner."""
    text = message_text(message)
    return (
        message.get("role") == "user"
        and "<untrusted_content" not in text
        and "The user says:" in text
        and "not the owner" not in text
    )


class SearchIndex:
    def __init__(self, path: Path, files: MemoryFiles) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        # One transaction: on a new data directory each statement would otherwise be a
        # commit of its own (a journal and an fsync each, ~40 ms of the first start).
        self._db.executescript(f"BEGIN;{_SCHEMA}COMMIT;")
        self._files = files
        # Set whenever a vector is dropped (or nothing was read yet): a cached matrix of
        # them must be read again; added vectors are appended to it by whoever added them.
        self.vectors_dropped = True

    def close(self) -> None:
        self._db.close()

    def _synced(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM synced WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def _mark(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO synced VALUES (?, ?)", (key, value))

    def sync_files(self) -> None:
        names = self._files.names()
        with self._db:
            for name in names:
                signature = self._files.signature(name)
                if self._synced(f"file:{name}") == signature:
                    continue
                self._drop(name)
                day = day_of(name)
                trusted = name != REVIEW_FILE
                for line in self._files.lines(name):
                    self._db.execute(
                        "INSERT INTO passages VALUES (?, ?, ?, ?, ?)",
                        (
                            line.text.lstrip("- "),
                            name,
                            line.entry_id or f"line {line.number}",
                            day.isoformat() if day else None,
                            int(trusted),
                        ),
                    )
                self._mark(f"file:{name}", signature)
            gone = [
                str(key)[5:]
                for (key,) in self._db.execute("SELECT key FROM synced WHERE key LIKE 'file:%'")
                if str(key)[5:] not in names
            ]
            for name in gone:  # a file the owner deleted
                self._drop(name)
                self._db.execute("DELETE FROM synced WHERE key = ?", (f"file:{name}",))

    def sync_session(self, session: str, messages: Sequence[Message]) -> None:
        """Index what ``session`` said since the last search (user and assistant turns),
        each dated by the time note of the events before it."""
        key = f"session:{session}"
        done = int(self._synced(key) or 0)
        source = f"session {session}"
        with self._db:
            if done > len(messages):  # the trajectory was reset: index it again
                self._drop(source)
                done = 0
            day = _day_before(messages, done)
            for position in range(done, len(messages)):
                message = messages[position]
                if message.get("role") not in ("user", "assistant"):
                    continue
                text = message_text(message)[:MAX_MESSAGE_CHARS].strip()
                if found := _DAY_NOTE.search(text) if message.get("role") == "user" else None:
                    day = found.group(1)
                if text:
                    self._db.execute(
                        "INSERT INTO passages VALUES (?, ?, ?, ?, ?)",
                        (text, source, f"message {position}", day, int(owner_typed(message))),
                    )
            self._mark(key, str(len(messages)))

    def _drop(self, source: str) -> None:
        """Forget one file's or session's passages, and their vectors first: FTS5 may give
        a freed rowid to the next passage, which must not inherit another's vector."""
        dropped = self._db.execute(
            "DELETE FROM vectors WHERE id IN (SELECT rowid FROM passages WHERE source = ?)",
            (source,),
        ).rowcount
        self._db.execute("DELETE FROM passages WHERE source = ?", (source,))
        if dropped:  # no vector gone: a cached matrix still holds only live passages
            self.vectors_dropped = True

    def search(self, query: str, limit: int) -> list[Hit]:
        return self.hits(self.ranked(query, limit))

    def ranked(self, query: str, limit: int) -> list[int]:
        """The passages' ids, best BM25 first, that share a word with ``query``."""
        words = _WORD.findall(query)
        if not words:
            return []
        # Any of the words, best BM25 first; each quoted so FTS5 syntax in a query is text.
        match = " OR ".join(f'"{word}"' for word in words[:32])
        rows = self._db.execute(
            "SELECT rowid FROM passages WHERE passages MATCH ? ORDER BY bm25(passages) LIMIT ?",
            (match, limit),
        ).fetchall()
        return [int(rowid) for (rowid,) in rows]

    def hits(self, ids: Sequence[int]) -> list[Hit]:
        """The passages ``ids`` names, in that order."""
        found: dict[int, Hit] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                "SELECT rowid, source, ref, day, text, trusted FROM passages "
                f"WHERE rowid IN ({marks})",
                chunk,
            ).fetchall()
            for rowid, source, ref, day, text, trusted in rows:
                found[int(rowid)] = Hit(
                    source=str(source),
                    ref=str(ref),
                    day=str(day) if day else None,
                    text=str(text),
                    trusted=bool(trusted),
                )
        return [found[i] for i in ids if i in found]

    # --- vectors (only when [memory] embeddings_model is set) ----------------------

    def use_embeddings_model(self, model: str) -> None:
        """Vectors of another model are not comparable: a new model starts over."""
        with self._db:
            if self._synced("embeddings_model") != model:
                self._db.execute("DELETE FROM vectors")
                self._mark("embeddings_model", model)
                self.vectors_dropped = True

    def unembedded(self, limit: int) -> list[tuple[int, str]]:
        rows = self._db.execute(
            "SELECT rowid, text FROM passages WHERE rowid NOT IN (SELECT id FROM vectors) "
            "ORDER BY rowid DESC LIMIT ?",  # the newest first: what was said last is sought most
            (limit,),
        ).fetchall()
        return [(int(rowid), str(text)) for rowid, text in rows]

    def add_vectors(self, vectors: Sequence[tuple[int, bytes]]) -> None:
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", vectors)

    def all_vectors(self) -> list[tuple[int, bytes]]:
        self.vectors_dropped = False
        rows = self._db.execute("SELECT id, vec FROM vectors ORDER BY id").fetchall()
        return [(int(i), bytes(vec)) for i, vec in rows]

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM passages").fetchone()[0])


def _day_before(messages: Sequence[Message], position: int) -> str | None:
    """The day of the newest time note before ``position`` (where a sync resumes)."""
    for message in reversed(messages[max(0, position - 200) : position]):
        if message.get("role") == "user" and (found := _DAY_NOTE.search(message_text(message))):
            return found.group(1)
    return None
