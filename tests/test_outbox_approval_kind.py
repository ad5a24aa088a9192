"""Which approval a message is the notice of is a typed field of the outbox record,
not its key: buttons go under a message iff the daemon made it as an approval notice.
Records written before the field existed are read from their key, once, on load."""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from tests.redis_server import REDIS_URL
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.whatsapp.window import ServiceWindow
from wakeful.core.approvals import notice_key
from wakeful.core.outbox.factory import open_outbox
from wakeful.store.memory_state import MemoryState
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore

# The outbox table as the daemon created it before records carried ``approval``.
OLD_SCHEMA = """
CREATE TABLE outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    channel TEXT NOT NULL,
    text TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    answers TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    acked_at REAL,
    address TEXT
);
CREATE INDEX outbox_by_state ON outbox(state, id);
CREATE INDEX outbox_unread ON outbox(session, channel, acked_at, id);
"""


class Platform:
    """A chat platform's client with buttons: records which messages got them."""

    max_chars = 4096
    resend_safe = False

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.buttons: list[tuple[str, str]] = []  # (text, approval id)

    async def send_text(self, address: str, text: str, *, ref: str) -> None:
        self.texts.append(text)

    async def send_typing(self, address: str) -> None:
        return None

    async def send_approval_notice(
        self, address: str, text: str, approval_id: str, *, ref: str
    ) -> None:
        self.buttons.append((text, approval_id))


async def buttons_of(message: OutgoingMessage) -> list[tuple[str, str]]:
    platform = Platform()
    await ChatChannel("chat:test:bot", platform, MemoryState()).deliver(message)
    return platform.buttons


def make_old_database(path: Path, rows: list[tuple[str, str]]) -> None:
    """An outbox file written by the older daemon, holding pending (key, text) rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA)
        conn.executemany(
            "INSERT INTO outbox (key, session, channel, text, state, created_at, updated_at,"
            " address) VALUES (?, 'main', 'telegram:bot', ?, 'pending', ?, ?, '42')",
            [(key, text, now, now) for key, text in rows],
        )
    conn.close()


@pytest.mark.anyio
async def test_an_old_sqlite_outbox_opens_and_its_notice_keeps_its_buttons(
    tmp_path: Path,
) -> None:
    path = tmp_path / "db" / "events.sqlite"
    make_old_database(
        path,
        [
            (notice_key("abcd2345"), "approve the deploy?"),
            (f"{notice_key('efgh6789')}:telegram:bot", "approve the restart?"),
            ("main:reply:run1:1", "a reply"),
        ],
    )
    store = await SqliteStore(path).open()
    try:
        outbox = await open_outbox(store)
        notice, second, reply = await outbox.pending()
        assert (notice.approval, second.approval, reply.approval) == ("abcd2345", "efgh6789", None)
        assert await buttons_of(notice) == [("approve the deploy?", "abcd2345")]
        assert await buttons_of(reply) == []
        # Rows written after the upgrade go by the field alone, whatever their key.
        lookalike = await outbox.add(
            NewMessage("main", "telegram:bot", "hi", "approval:zz", address="42")
        )
        assert lookalike.approval is None and await buttons_of(lookalike) == []
        made = await outbox.add(
            NewMessage("main", "telegram:bot", "ok?", "k", address="42", approval="ijkl2345")
        )
        assert await buttons_of(made) == [("ok?", "ijkl2345")]
    finally:
        await store.aclose()
    # Opening it again (the column now there) changes nothing.
    store = await SqliteStore(path).open()
    try:
        outbox = await open_outbox(store)
        found = [(m.key, m.approval) for m in await outbox.history("main")]
        assert found == [
            (notice_key("abcd2345"), "abcd2345"),
            (f"{notice_key('efgh6789')}:telegram:bot", "efgh6789"),
            ("main:reply:run1:1", None),
            ("approval:zz", None),
            ("k", "ijkl2345"),
        ]
    finally:
        await store.aclose()


@pytest.fixture
async def redis_outbox(redis_prefix: str) -> AsyncIterator[tuple[RedisStore, str]]:
    store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    yield store, redis_prefix
    await store.aclose()


@pytest.mark.anyio
async def test_an_old_redis_record_without_the_field_keeps_its_buttons(
    redis_outbox: tuple[RedisStore, str],
) -> None:
    """A hash written by the older daemon has no ``approval`` field at all."""
    store, prefix = redis_outbox
    outbox = await open_outbox(store)
    old = await outbox.add(
        NewMessage("main", "telegram:bot", "ok?", notice_key("abcd2345"), address="42")
    )
    lookalike = await outbox.add(
        NewMessage("main", "telegram:bot", "hi", notice_key("zz"), address="42")
    )
    assert (old.approval, lookalike.approval) == (None, None)  # made as plain messages
    client = Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        await client.hdel(f"{prefix}outbox:msg:{old.id}", "approval")  # as the old daemon wrote it
    finally:
        await client.aclose()
    found = await outbox.get(old.id)
    assert found is not None and found.approval == "abcd2345"
    assert await buttons_of(found) == [("ok?", "abcd2345")]
    again = await outbox.get(lookalike.id)
    assert again is not None and await buttons_of(again) == []


KEYS = st.one_of(
    st.text(max_size=40),
    st.builds(lambda tail: notice_key(tail), st.text(max_size=30)),
    st.builds(lambda tail: f"approval:{tail}", st.text(alphabet="abc:z234", max_size=20)),
)
APPROVALS = st.none() | st.text(alphabet="abcdefghijklmnopqrstuvwxyz234567", min_size=8, max_size=8)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=KEYS, approval=APPROVALS)
def test_buttons_iff_made_as_an_approval_notice(
    tmp_path: Path, key: str, approval: str | None
) -> None:
    """Whatever the key text (one the model chose may look like a notice's), a message
    stored and read back gets buttons iff it was made as an approval's notice."""

    async def check() -> None:
        folder = tempfile.mkdtemp(dir=tmp_path)
        store = await SqliteStore(Path(folder) / "events.sqlite").open()
        try:
            outbox = await open_outbox(store)
            made = NewMessage("main", "telegram:bot", "text", key, address="42", approval=approval)
            added = await outbox.add(made)
            stored = await outbox.get(added.id)
            assert stored is not None
            buttons = await buttons_of(stored)
            assert buttons == ([] if approval is None else [("text", approval)])
        finally:
            await store.aclose()

    anyio.run(check)


@pytest.mark.anyio
async def test_a_whatsapp_reply_kept_for_the_window_keeps_its_approval(tmp_path: Path) -> None:
    """A notice held until the user writes again is released as a notice (new key)."""
    store = await SqliteStore(tmp_path / "events.sqlite").open()
    try:
        outbox = await open_outbox(store)
        window = ServiceWindow(MemoryState(), "main")
        notice = await outbox.add(
            NewMessage("main", "whatsapp:main", "ok?", "n", address="15550001", approval="abcd2345")
        )
        plain = await outbox.add(NewMessage("main", "whatsapp:main", "hi", "approval:lookalike"))
        await window.keep("15550001", notice, notice.text)
        await window.keep("15550001", plain, plain.text)
        released: list[OutgoingMessage] = []

        async def send(message: NewMessage) -> OutgoingMessage:
            released.append(await outbox.add(message))
            return released[-1]

        assert await window.release("15550001", "whatsapp:main", send) == 2
        assert [(m.text, m.approval) for m in released] == [("ok?", "abcd2345"), ("hi", None)]
        assert await buttons_of(released[0]) == [("ok?", "abcd2345")]
    finally:
        await store.aclose()
