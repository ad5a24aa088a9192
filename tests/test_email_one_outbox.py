"""E-mail is a channel of the shared outbox: the draft's bytes travel as the outbox's
text unchanged, the Message-ID rule is the channel's confirmation hook, and drafts an
older version sent through its own e-mail outbox are reported truthfully, never resent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import test_store_contract
from tests.email_old_state import write_old_draft_row
from tests.mail_servers import ImapServer, SmtpSink
from tests.outbox_owners import lapse_outbox_owners
from tests.redis_server import REDIS_URL
from tests.test_store_contract import Opener
from wakeful.channels.email.accounts import MailAccount
from wakeful.channels.email.channel import EmailChannel, message_key
from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.email.drafts import Drafts
from wakeful.channels.email.mail_state import MailState
from wakeful.channels.email.old_state import import_old_tables
from wakeful.channels.email.tools.compose import _build, render
from wakeful.core.outbox.channels import Receipt
from wakeful.core.outbox.deliverer import Deliverer, Delivery
from wakeful.core.outbox.factory import open_outbox
from wakeful.store.base import Store
from wakeful.store.outbox.port import OutgoingMessages
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.outbox.redis import RedisOutbox
from wakeful.store.outbox.states import DeliveryState
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio
# The event store on each backend, opened on the same data each time (a file, a key prefix).
opener = test_store_contract.opener

# Text a person writes: any letters, digits, punctuation, symbols and spaces of any
# script, and newlines (control characters and Unicode line separators are not text).
WRITTEN = st.characters(categories=("L", "M", "N", "P", "S", "Zs"))
BODY = st.text(st.one_of(WRITTEN, st.just("\n")), max_size=400)
SUBJECT = st.lists(st.text(WRITTEN.filter(lambda c: not c.isspace()), min_size=1, max_size=12),
                   max_size=8).map(" ".join)  # fmt: skip


def account(imap: ImapServer, smtp: SmtpSink | None = None) -> MailAccount:
    config = EmailAccountConfig(**imap.account(**(smtp.account() if smtp else {})))
    return MailAccount(config, config.resolve_password())


@given(body=BODY, subject=SUBJECT)
@settings(max_examples=60, deadline=None)
def test_a_draft_is_7_bit_clean_and_round_trips(body: str, subject: str) -> None:
    """Whatever the body and subject, the message is ASCII (quoted-printable or base64
    bodies, RFC 2047 headers), so the outbox's text is the same bytes, and a reader
    gets the body and subject back exactly."""
    config = EmailAccountConfig(name="work", imap_host="127.0.0.1", username="me@example.test")
    msg = _build(MailAccount(config, ""), ["pat@example.test"], [], subject, body, None)
    raw = render(msg)
    assert raw.isascii() and raw.decode("ascii").encode("ascii") == raw
    back = message_from_bytes(raw, policy=policy.default)
    assert isinstance(back, EmailMessage)
    assert back["Subject"] == subject
    content = back.get_body(("plain",))
    assert content is not None
    # On the wire lines end in CRLF, and set_content ends the body with a line end;
    # nothing else changes.
    text = content.get_content().replace("\r\n", "\n")
    assert text == body + ("" if body.endswith("\n") else "\n")


def test_a_non_ascii_address_is_refused_not_sent_8_bit() -> None:
    config = EmailAccountConfig(name="work", imap_host="127.0.0.1", username="me@example.test")
    msg = _build(MailAccount(config, ""), ["josé@exämple.test"], [], "hi", "hello", None)
    with pytest.raises(ValueError, match="7-bit"):
        render(msg)


@dataclass
class Sending:
    drafts: Drafts
    state: MailState
    outbox: OutgoingMessages
    deliverer: Deliverer


@pytest.fixture
async def sending(
    tmp_path: Path, imap_server: ImapServer, smtp_sink: SmtpSink
) -> AsyncIterator[Sending]:
    """The e-mail drafts over a real outbox (SQLite) and real IMAP and SMTP servers."""
    store = await SqliteStore(tmp_path / "wakeful.db").open()
    state = MailState(store.state())
    mail = account(imap_server, smtp_sink)
    channel = EmailChannel(mail)
    outbox = await open_outbox(store)
    deliverer = Deliverer(outbox, [channel])

    async def deliver(message: NewMessage) -> Delivery:
        return await deliverer.deliver_settled(message, 5.0)

    drafts = Drafts(state, {"work": channel}, deliver)
    try:
        yield Sending(drafts, state, outbox, deliverer)
    finally:
        await store.aclose()


async def draft(sending: Sending, body: str = "See you Tuesday.") -> str:
    config = EmailAccountConfig(name="work", imap_host="127.0.0.1", username="me@example.test")
    msg = _build(MailAccount(config, ""), ["pat@example.test"], [], "Tuesday", body, None)
    return await sending.drafts.add(
        "work", str(msg["Message-ID"]), ["pat@example.test"], render(msg)
    )


async def test_send_email_goes_through_the_shared_outbox_once(
    sending: Sending, smtp_sink: SmtpSink, imap_server: ImapServer
) -> None:
    draft_id = await draft(sending, body="Grüße, à mardi — 火曜日に")
    first = await sending.drafts.send(draft_id, "main")
    assert first.ok and first.text.startswith("sent <") and "a copy was saved in Sent" in first.text
    again = await sending.drafts.send(draft_id, "main")
    assert again.ok and "already sent" in again.text and "not sent again" in again.text
    assert len(smtp_sink.messages) == 1
    row = await sending.drafts.get(draft_id)
    assert row is not None and smtp_sink.messages[0].data.replace(b"\r\n", b"\n") in (
        row.raw.replace(b"\r\n", b"\n"),
        row.raw.replace(b"\r\n", b"\n") + b"\n",
    )
    [message] = await sending.outbox.history("main")
    assert message.key == message_key(row.message_id) and message.channel == "email:work"
    assert message.state is DeliveryState.SENT and message.attempts == 1
    assert len(imap_server.uids("Sent")) == 1


def old_style_message(message_id: str) -> bytes:
    """A draft as the version before the one outbox composed it: policy.default, so a
    non-ASCII body went out 8-bit (UTF-8 as is)."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "me@example.test", "pat@example.test", "Tuesday"
    msg["Message-ID"] = message_id
    msg.set_content("Grüße - bis Dienstag")
    raw = msg.as_bytes()
    assert not raw.isascii()
    return raw


async def test_drafts_an_older_version_sent_are_reported_and_never_resent(
    tmp_path: Path, sending: Sending, smtp_sink: SmtpSink, imap_server: ImapServer
) -> None:
    """Rows left by the e-mail package's own outbox (in its table of before the state
    port, copied at start): sent and unknown ones are reported as recorded; a `sending`
    one is settled by the Message-ID rule (found in Sent → sent, not found → unknown); a
    `prepared` one was never handed over and is sent now."""
    path = tmp_path / "wakeful.db"
    for n, state in enumerate(["sent", "unknown", "sending", "sending", "prepared"]):
        raw = old_style_message(f"<old{n}@example.test>")
        write_old_draft_row(
            path, f"<old{n}@example.test>", f"draft-old{n}", state, raw, f"old: {state}"
        )
    assert await import_old_tables(sending.state, path) == 5  # as the component does at start
    found = b"Message-ID: <old2@example.test>\r\nSubject: x\r\n\r\nhello\r\n"
    with imap_server.client() as client:  # like servers that keep sent mail themselves
        client.create_folder("Sent")
    imap_server.append(found, mailbox="Sent")
    results = [await sending.drafts.send(f"draft-old{n}", "main") for n in range(5)]
    assert "already sent (old: sent)" in results[0].text and results[0].ok
    assert "UNKNOWN: old: unknown" in results[1].text and not results[1].ok
    assert "already sent (found in Sent after a restart)" in results[2].text
    assert "UNKNOWN" in results[3].text and "it is not in Sent" in results[3].text
    assert results[4].ok and results[4].text.startswith("sent <old4@example.test>")
    # Settled once: asked again, the same answers, and still nothing more sent.
    assert "already sent" in (await sending.drafts.send("draft-old2", "main")).text
    assert "UNKNOWN" in (await sending.drafts.send("draft-old3", "main")).text
    assert [m.rcpt_tos for m in smtp_sink.messages] == [["pat@example.test"]]
    # The 8-bit old draft went out 7-bit, its text unchanged.
    received = message_from_bytes(smtp_sink.messages[0].data, policy=policy.default)
    assert isinstance(received, EmailMessage) and smtp_sink.messages[0].data.isascii()
    assert received["Message-ID"] == "<old4@example.test>"
    body = received.get_body(("plain",))
    assert body is not None and body.get_content().strip() == "Grüße - bis Dienstag"
    assert [m.key for m in await sending.outbox.history("main")] == ["email:<old4@example.test>"]


class Confirming:
    """A channel whose confirmation answers are scripted (True / False / None)."""

    resend_safe = False

    def __init__(self, answers: list[bool | None]) -> None:
        self.name = "email:test"
        self.answers = answers
        self.asked = 0
        self.asked_event = anyio.Event()

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        raise AssertionError("a message left unknown is never handed over again")

    async def confirm_delivered(self, message: OutgoingMessage) -> bool | None:
        self.asked += 1
        if self.asked >= len(self.answers):
            self.asked_event.set()
        return self.answers[min(self.asked, len(self.answers)) - 1]


async def left_sending(opener: Opener) -> tuple[Store, OutgoingMessages, int]:
    """A message a daemon claimed and then died with (on Redis: its lease lapsed too)."""
    store = await opener()
    outbox = await open_outbox(store)
    record, claimed = await outbox.add_claimed(NewMessage("main", "email:test", "x", "k"))
    assert claimed
    await store.aclose()
    lapse_outbox_owners(store)
    store = await opener()
    return store, await open_outbox(store), record.id


@pytest.mark.parametrize(
    ("answers", "settled"),
    [([True], DeliveryState.SENT), ([False], DeliveryState.UNKNOWN),
     ([None, None, True], DeliveryState.SENT)],
)  # fmt: skip
async def test_the_deliverer_asks_the_channel_about_a_send_a_crash_cut_off(
    opener: Opener, answers: list[bool | None], settled: DeliveryState
) -> None:
    """Left `sending` (on either backend): unknown at start, then the channel's answer:
    yes settles it sent, no leaves it unknown, "cannot tell" is asked again later."""
    store, outbox, message_id = await left_sending(opener)
    channel = Confirming(answers)
    deliverer = Deliverer(outbox, [channel], retry_s=0.05)
    try:
        async with anyio.create_task_group() as group:
            await group.start(deliverer.run)
            with anyio.fail_after(5):
                await channel.asked_event.wait()
            group.cancel_scope.cancel()
        message = await outbox.get(message_id)
        assert message is not None and message.state is settled and message.attempts == 1
        assert channel.asked == len(answers)
    finally:
        await store.aclose()


async def test_a_gone_fleet_members_send_is_confirmed_by_a_running_deliverer(
    redis_prefix: str,
) -> None:
    """On Redis, a send claimed by a daemon that dies while the others run is settled by
    their sweep (``watch_claims``) and then confirmed through the channel, as at a start."""
    channel = Confirming([True])
    ttl_s = 0.3  # the leases: a gone daemon is noticed within about two of these
    running_store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    gone_store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    try:
        running = await RedisOutbox(running_store, owner_ttl_s=ttl_s).open()
        deliverer = Deliverer(running, [channel], retry_s=0.05)
        async with anyio.create_task_group() as group:
            await group.start(deliverer.run)  # nothing to settle at its start
            gone = await RedisOutbox(gone_store, owner_ttl_s=ttl_s).open()
            record, _ = await gone.add_claimed(NewMessage("main", "email:test", "x", "k"))
            # `gone` runs no deliverer: nothing renews its lease, which lapses.
            with anyio.fail_after(5):
                await channel.asked_event.wait()
            group.cancel_scope.cancel()
        settled = await running.get(record.id)
        assert settled is not None and settled.state is DeliveryState.SENT
        assert "confirmed afterwards" in settled.last_error and channel.asked == 1
    finally:
        await gone_store.aclose()
        await running_store.aclose()
