"""The shared delivery states (every channel's, e-mail's too) and where a reply goes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.email_old_state import write_old_draft_row
from wakeful.channels.email.mail_state import MailState
from wakeful.channels.email.old_state import import_old_tables
from wakeful.core.outbox.targets import (
    LOCAL_CHAT,
    Target,
    notification_targets,
    parse_target,
    resolve_target,
)
from wakeful.kernel.events import Event, user_message
from wakeful.store.outbox.states import DeliveryState, IllegalMove, check_move
from wakeful.store.sqlite import SqliteStore


def test_one_state_machine_for_every_channel() -> None:
    """E-mail reports the shared enum, not a copy; unknown is never resent, but a channel
    that confirms a send afterwards may settle it sent."""
    from wakeful.channels.email import drafts

    assert drafts.State is DeliveryState
    check_move(DeliveryState.SENDING, DeliveryState.UNKNOWN)
    check_move(DeliveryState.UNKNOWN, DeliveryState.SENT)
    with pytest.raises(IllegalMove):
        check_move(DeliveryState.UNKNOWN, DeliveryState.SENDING)  # never resent blindly
    with pytest.raises(IllegalMove):
        check_move(DeliveryState.UNKNOWN, DeliveryState.PENDING)


@pytest.mark.anyio
async def test_email_rows_stored_as_prepared_stay_readable_and_sendable(tmp_path: Path) -> None:
    """A draft written before the states were shared ('prepared') reads as a draft never
    handed over: send_email hands it to the outbox (test_email_one_outbox sends one)."""
    path = tmp_path / "wakeful.db"
    write_old_draft_row(path, "<m@x>", "draft-1", "prepared", b"\x00")
    store = await SqliteStore(path).open()
    try:
        state = MailState(store.state())
        assert await import_old_tables(state, path) == 1
        row = await state.draft("draft-1")
        assert row is not None and row.legacy_state is None and row.raw == b"\x00"
        # Nor can it be settled as an older version's send: it never was one.
        assert not await state.settle_legacy("<m@x>", DeliveryState.SENT, "test")
    finally:
        await store.aclose()


def event(channel: str, reply_to: str | None = None) -> Event:
    data = user_message("hi").model_dump()
    data["channel"] = channel
    data["context"]["reply_to"] = reply_to
    return Event.parse(data)


@pytest.mark.parametrize(
    ("answering", "defaults", "last_active", "target"),
    [
        (event("slack:#ops", reply_to="email:ops@example.com"), {}, None,
         Target("email:ops@example.com")),
        (event("slack:#ops"), {}, None, Target("slack:#ops")),
        (event("chat:api"), {}, None, Target(LOCAL_CHAT)),  # the HTTP API's label: the local chat
        (event("timer:nightly"), {"main": "slack:#ops"}, Target("email:me"), Target("slack:#ops")),
        (event("timer:nightly"), {}, Target("email:me"), Target("email:me")),
        (None, {}, Target("nowhere:x"), Target(LOCAL_CHAT)),
        (event("timer:nightly"), {}, None, Target(LOCAL_CHAT)),
        # A chat platform: the reply goes back to the conversation the message came from.
        (event("chat:telegram:tg", reply_to="4242"), {}, None, Target("chat:telegram:tg", "4242")),
        # A notification: where the user last wrote, conversation included.
        (None, {}, Target("chat:telegram:tg", "4242"), Target("chat:telegram:tg", "4242")),
        (event("timer:nightly"), {"main": "chat:telegram:tg"}, Target("chat:telegram:tg", "7"),
         Target("chat:telegram:tg", "7")),
    ],
)  # fmt: skip
def test_target_resolution(
    answering: Event | None, defaults: dict[str, str], last_active: Target | None, target: Target
) -> None:
    """reply_to, then the event's channel, then the session default, the last active
    channel, then the local chat — each only if such a channel exists."""
    known = {"slack:#ops", "email:ops@example.com", "email:me", "chat:telegram:tg", LOCAL_CHAT}
    got = resolve_target(
        answering, session="main", known=known, session_defaults=defaults, last_active=last_active
    )
    assert got == target


TG = Target("chat:telegram:tg", "4242")
KNOWN = {"chat:telegram:tg", "chat:slack:work", LOCAL_CHAT}


@pytest.mark.parametrize(
    ("urgency", "last_active", "prefer", "urgent", "targets"),
    [
        # Where the user last wrote, whatever the urgency.
        ("normal", TG, [], [], [TG]),
        ("low", TG, [Target("chat:slack:work", "C1")], [], [TG]),
        # Never wrote anywhere: the first preferred channel that exists, else the web page.
        ("normal", None, [Target("nowhere:x"), Target("chat:slack:work", "C1")], [],
         [Target("chat:slack:work", "C1")]),
        ("normal", None, [], [], [Target(LOCAL_CHAT)]),
        # High/urgent: also every urgent channel and the web page, each once.
        ("urgent", TG, [], [Target("chat:slack:work", "C1"), TG],
         [TG, Target("chat:slack:work", "C1"), Target(LOCAL_CHAT)]),
        ("high", Target(LOCAL_CHAT), [], [], [Target(LOCAL_CHAT)]),
    ],
)  # fmt: skip
def test_notification_targets(
    urgency: str,
    last_active: Target | None,
    prefer: list[Target],
    urgent: list[Target],
    targets: list[Target],
) -> None:
    got = notification_targets(
        urgency, known=KNOWN, last_active=last_active, prefer=prefer, urgent=urgent
    )
    assert got == targets


def test_notify_targets_in_config_name_the_conversation() -> None:
    assert parse_target("chat:telegram:tg#123") == Target("chat:telegram:tg", "123")
    assert parse_target("chat:cli") == Target(LOCAL_CHAT)
