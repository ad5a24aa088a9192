"""Email state on either backend (and as older versions left it), and with Redis one
watcher per mailbox across daemons."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from tests.email_old_state import write_old_draft_row, write_old_redis_state, write_old_rows
from tests.fleet_components import FleetMember, fleet_settings, run_member
from tests.mail_servers import ImapServer, make_message
from tests.redis_server import REDIS_URL
from wakeful.app.config import Settings
from wakeful.channels.email.component import EmailComponent
from wakeful.channels.email.cursor import Cursor
from wakeful.channels.email.draft_record import Draft
from wakeful.channels.email.inbound import email_id
from wakeful.channels.email.mail_state import MailState
from wakeful.channels.email.old_state import import_old_tables
from wakeful.store.base import Store
from wakeful.store.outbox.states import DeliveryState
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio


class QuickTakeover(EmailComponent):
    lease_ttl_s = 0.6  # a short lease: the other daemon takes over within a second


def settings(tmp_path: Path, name: str, prefix: str, imap: ImapServer) -> Settings:
    account = imap.account(initial_sync="all")
    return fleet_settings(tmp_path / name, prefix, llm={"model": ""}, email={"accounts": [account]})


def state_of(component: EmailComponent) -> str:
    return component.watchers[0].health.state


async def wait_until(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    with anyio.fail_after(timeout_s):
        while not check():  # noqa: ASYNC110 - a watcher's state has no event to await
            await anyio.sleep(0.02)


def mail_ids(member: FleetMember) -> list[str]:
    return [e.id for e in member.submitted if e.kind == "email.received"]


async def deliver_one_by_one(imap: ImapServer, to: FleetMember, subject: str, count: int) -> None:
    """Append mails one at a time, each once the watcher has delivered the one before."""
    for n in range(count):
        before = len(mail_ids(to))
        await anyio.to_thread.run_sync(
            imap.append, make_message("x@example.test", f"{subject} {n}", "body")
        )
        await wait_until(lambda before=before: len(mail_ids(to)) > before)  # type: ignore[misc]


async def test_one_watcher_per_mailbox_and_takeover_without_doubles(
    tmp_path: Path, fast_imap_server: ImapServer, redis_prefix: str
) -> None:
    """Two email components on one prefix: one watches, the other takes over when it stops."""
    imap = fast_imap_server
    first, second = QuickTakeover(), QuickTakeover()
    async with run_member("b", second, settings(tmp_path, "b", redis_prefix, imap)) as b:
        await wait_until(lambda: state_of(second) == "idle")  # b came first: it holds the lease
        async with run_member("a", first, settings(tmp_path, "a", redis_prefix, imap)) as a:
            assert state_of(first) == "standby"  # no IMAP connection, no IDLE
            await deliver_one_by_one(imap, b, "before", 3)
            assert state_of(first) == "standby" and mail_ids(a) == []
            # b stops (its lease is released); a takes the mailbox from the shared cursor.
            await _stop(b)
            await wait_until(lambda: state_of(first) == "idle", timeout_s=5)
            await deliver_one_by_one(imap, a, "after", 2)
    counts = Counter(mail_ids(a) + mail_ids(b))
    assert len(counts) == 5 and set(counts.values()) == {1}, counts


async def _stop(member: FleetMember) -> None:
    """Stop a member's component while the test's block for it is still open."""
    member.stop()
    await member.stopped.wait()


@pytest.fixture(params=["sqlite", "redis"])
async def mail_state(
    request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str
) -> AsyncIterator[MailState]:
    """The e-mail state on either backend's store (SQLite in ``tmp_path/wakeful.db``)."""
    store: Store
    if request.param == "redis":
        store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    else:
        store = await SqliteStore(tmp_path / "wakeful.db").open()
    try:
        yield MailState(store.state())
    finally:
        await store.aclose()


async def test_mail_state_keeps_cursors_forward_and_drafts(mail_state: MailState) -> None:
    """A cursor never moves back; drafts are kept as written, and an older version's
    send left `sending` is settled once, by compare-and-set."""
    state = mail_state
    await state.set_cursor("work", "INBOX", Cursor(7, 0))
    await state.advance("work", "INBOX", Cursor(7, 5), "<m5@x>", "email:5")
    await state.advance("work", "INBOX", Cursor(7, 3), "<m3@x>", "email:3")  # a stale writer
    assert await state.cursor("work", "INBOX") == Cursor(7, 5)
    assert await state.seen("work", "INBOX", "<m5@x>") == "email:5"
    await state.advance("work", "INBOX", Cursor(7, 6), "<m5@x>", "email:6")  # the same mail
    assert await state.seen("work", "INBOX", "<m5@x>") == "email:5"  # as first delivered
    row = Draft("<d@x>", "draft-1", "work", ["a@x"], b"\x00raw")
    await state.add_draft(row, 0.0)
    assert await state.draft("draft-1") == row and await state.draft("<d@x>") == row
    assert await state.draft("draft-none") is None
    assert not await state.settle_legacy("<d@x>", DeliveryState.SENT, "never sent")
    old = Draft("<o@x>", "draft-o", "work", ["a@x"], b"raw", DeliveryState.SENDING, "smtp")
    await state.add_draft(old, 0.0)
    assert await state.settle_legacy("<o@x>", DeliveryState.UNKNOWN, "not in Sent")
    assert not await state.settle_legacy("<o@x>", DeliveryState.SENT, "again")
    settled = await state.draft("<o@x>")
    assert settled is not None and settled.legacy_state is DeliveryState.UNKNOWN
    assert settled.legacy_detail == "not in Sent"


async def test_old_mail_tables_move_into_the_state_once(
    tmp_path: Path, mail_state: MailState
) -> None:
    """The tables of before the state port (in ``wakeful.db`` whatever the backend):
    cursors, seen Message-IDs and drafts are kept, then the tables are emptied."""
    path = tmp_path / "wakeful.db"
    write_old_rows(path, "INSERT INTO email_cursor VALUES (?, ?, ?, ?, ?)",
                   ("work", "INBOX", 9, 42, 0), ("work", "Archive", 3, 5, 2))  # fmt: skip
    write_old_rows(path, "INSERT INTO email_seen VALUES (?, ?, ?, ?)",
                   ("work", "INBOX", "<seen@x>", "email:42"))  # fmt: skip
    write_old_draft_row(path, "<d@x>", "draft-9", "", b"raw")
    write_old_draft_row(path, "<s@x>", "draft-8", "sent", b"raw", "accepted")
    write_old_draft_row(path, "<p@x>", "draft-7", "prepared", b"\x00")  # never handed over
    assert await import_old_tables(mail_state, path) == 5
    assert await mail_state.cursor("work", "INBOX") == Cursor(9, 42)
    assert await mail_state.cursor("work", "Archive") == Cursor(3, 5, 2)
    assert await mail_state.seen("work", "INBOX", "<seen@x>") == "email:42"
    assert await mail_state.draft("draft-9") == Draft("<d@x>", "draft-9", "work",
                                                      ["pat@example.test"], b"raw")  # fmt: skip
    sent = await mail_state.draft("draft-8")
    assert sent is not None and sent.legacy_state is DeliveryState.SENT
    assert sent.legacy_detail == "accepted"
    prepared = await mail_state.draft("draft-7")
    assert prepared is not None and prepared.legacy_state is None and prepared.raw == b"\x00"
    await mail_state.advance("work", "INBOX", Cursor(9, 43), "", "email:43")
    assert await import_old_tables(mail_state, path) == 0  # the tables were emptied
    assert await mail_state.cursor("work", "INBOX") == Cursor(9, 43)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM email_outbox").fetchone() == (0,)
    conn.close()


async def test_redis_mail_state_of_before_the_port_is_read_as_it_is(redis_prefix: str) -> None:
    """A Redis prefix written by the e-mail state of before: its cursor, seen
    Message-IDs and drafts read the same; an older send left `sending` settles once."""
    await write_old_redis_state(redis_prefix, [
        {"message_id": "<d@x>", "draft_id": "draft-1", "state": "", "detail": "", "raw": "hi"},
        {"message_id": "<o@x>", "draft_id": "draft-2", "state": "sending", "detail": "smtp",
         "raw": "old"},
    ])  # fmt: skip
    store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    try:
        state = MailState(store.state())
        assert await state.cursor("work", "INBOX") == Cursor(7, 12, 3)
        assert await state.seen("work", "INBOX", "<seen@x>") == "email:12"
        draft = await state.draft("draft-1")
        assert draft == Draft("<d@x>", "draft-1", "work", ["pat@example.test"], b"hi")
        assert await state.draft("<d@x>") == draft
        assert await state.settle_legacy("<o@x>", DeliveryState.SENT, "found in Sent")
        assert not await state.settle_legacy("<o@x>", DeliveryState.UNKNOWN, "again")
        settled = await MailState(store.state()).draft("draft-2")
        assert settled is not None and settled.legacy_state is DeliveryState.SENT
        assert settled.raw == b"old" and settled.legacy_detail == "found in Sent"
        await state.advance("work", "INBOX", Cursor(7, 13, 3), "<n@x>", "email:13")
        assert await state.cursor("work", "INBOX") == Cursor(7, 13, 3)
    finally:
        await store.aclose()


async def test_a_daemon_upgraded_from_the_old_tables_resumes_at_their_cursor(
    tmp_path: Path, fast_imap_server: ImapServer, redis_prefix: str
) -> None:
    """The e-mail component started on a data directory whose old tables hold a cursor
    past two mails: it delivers only the mail that came after (initial_sync = "all"
    would otherwise deliver all three)."""
    imap = fast_imap_server
    for n in range(2):
        await anyio.to_thread.run_sync(imap.append, make_message("x@example.test", f"old {n}", "b"))
    with imap.client() as client:
        uidvalidity = int(client.select_folder("INBOX", readonly=True)[b"UIDVALIDITY"])
    config = settings(tmp_path, "a", redis_prefix, imap)
    data_dir = config.daemon.data_dir_path()
    data_dir.mkdir(parents=True, exist_ok=True)
    write_old_rows(data_dir / "wakeful.db", "INSERT INTO email_cursor VALUES (?, ?, ?, ?, ?)",
                   ("work", "INBOX", uidvalidity, max(imap.uids("INBOX")), 0))  # fmt: skip
    component = EmailComponent()
    async with run_member("a", component, config) as a:
        await wait_until(lambda: state_of(component) == "idle")
        await deliver_one_by_one(imap, a, "new", 1)
    new_uid = max(imap.uids("INBOX"))
    assert mail_ids(a) == [email_id("work", "INBOX", uidvalidity, new_uid)]
