"""Email with the Redis backend: shared state, and one watcher per mailbox across daemons."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.fleet_components import FleetMember, fleet_settings, run_member
from tests.mail_servers import ImapServer, make_message
from wakeful.app.config import Settings
from wakeful.channels.email.component import EmailComponent
from wakeful.channels.email.db import Cursor, MailDb
from wakeful.channels.email.draft_record import Draft
from wakeful.channels.email.redis_import import import_sqlite_mail_state
from wakeful.channels.email.redis_state import RedisMailState
from wakeful.core.outbox.states import DeliveryState
from wakeful.store.redis_connect import component_redis

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


async def test_redis_state_keeps_cursors_forward_and_drafts(redis_prefix: str) -> None:
    """The Redis mail state: a cursor never moves back; drafts are kept as written, and
    an older version's send left `sending` is settled once, by compare-and-set."""
    settings = fleet_settings(Path("/nonexistent"), redis_prefix)
    state = RedisMailState(component_redis(settings.store, "test"), redis_prefix)
    try:
        await state.set_cursor("work", "INBOX", Cursor(7, 0))
        await state.advance("work", "INBOX", Cursor(7, 5), "<m5@x>", "email:5")
        await state.advance("work", "INBOX", Cursor(7, 3), "<m3@x>", "email:3")  # a stale writer
        assert await state.cursor("work", "INBOX") == Cursor(7, 5)
        assert await state.seen("work", "INBOX", "<m5@x>") == "email:5"
        row = Draft("<d@x>", "draft-1", "work", ["a@x"], b"\x00raw")
        await state.add_draft(row, 0.0)
        assert await state.draft("draft-1") == row
        assert not await state.settle_legacy("<d@x>", DeliveryState.SENT, "never sent")
        old = Draft("<o@x>", "draft-o", "work", ["a@x"], b"raw", DeliveryState.SENDING, "smtp")
        await state.add_draft(old, 0.0)
        assert await state.settle_legacy("<o@x>", DeliveryState.UNKNOWN, "not in Sent")
        assert not await state.settle_legacy("<o@x>", DeliveryState.SENT, "again")
        settled = await state.draft("<o@x>")
        assert settled is not None and settled.legacy_state is DeliveryState.UNKNOWN
        assert settled.legacy_detail == "not in Sent"
    finally:
        await state.aclose()


async def test_mail_state_in_the_sqlite_file_moves_to_redis_once(
    tmp_path: Path, redis_prefix: str
) -> None:
    """Switching to the Redis backend keeps the cursor, seen Message-IDs and drafts."""
    path = tmp_path / "wakeful.db"
    old = MailDb(path)
    await old.set_cursor("work", "INBOX", Cursor(9, 41))
    await old.advance("work", "INBOX", Cursor(9, 42), "<seen@x>", "email:42")
    draft = Draft("<d@x>", "draft-9", "work", ["a@x"], b"raw")
    sent = Draft("<s@x>", "draft-8", "work", ["a@x"], b"raw", DeliveryState.SENT, "accepted")
    await old.add_draft(draft, 1.0)
    await old.add_draft(sent, 1.0)  # as an older version left it: sent, never resent
    await old.aclose()
    settings = fleet_settings(tmp_path / "unused", redis_prefix)
    state = RedisMailState(component_redis(settings.store, "test"), redis_prefix)
    try:
        assert await import_sqlite_mail_state(path, state) == 3
        assert await state.cursor("work", "INBOX") == Cursor(9, 42)
        assert await state.seen("work", "INBOX", "<seen@x>") == "email:42"
        assert await state.draft("draft-9") == draft
        assert await state.draft("draft-8") == sent
        assert await import_sqlite_mail_state(path, state) == 0  # the file was emptied
    finally:
        await state.aclose()
