"""The structured event (SPEC §2): what parses, what is refused and why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from wakeful.kernel.events import Event, EventError, user_message


def valid(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "imap:42:7",
        "kind": "email.received",
        "source": {"type": "email", "principal": "client@example.com", "trusted": False},
        "channel": "imap",
        "content": {"text": "Hello", "subject": "Invoice", "data": {"uid": 7}},
        "context": {"priority": "high", "related_call_id": "call_7", "thread": "t-1"},
        "session": "user:alice",
        "occurred_at": "2026-01-01T10:00:00+00:00",
        "received_at": "2026-01-01T10:00:01+00:00",
    }
    data.update(overrides)
    return data


def test_full_event_parses_with_every_field() -> None:
    """A complete event parses and keeps its id, kind, provenance, content and context."""
    event = Event.parse(valid())
    assert event.id == "imap:42:7"
    assert event.kind == "email.received"
    assert event.source.type == "email"
    assert event.source.principal == "client@example.com"
    assert event.trusted is False
    assert event.channel == "imap"
    assert event.content.subject == "Invoice"
    assert event.content.data == {"uid": 7}
    assert event.context.priority == "high"
    assert event.context.related_call_id == "call_7"
    assert event.session == "user:alice"
    assert event.occurred_at == datetime(2026, 1, 1, 10, 0, tzinfo=UTC)


def test_minimal_event_gets_defaults() -> None:
    """A minimal event defaults to session main, normal priority and aware times."""
    event = Event.parse(
        {"id": "t:1", "kind": "timer.trigger", "source": {"type": "system"}, "channel": "timer"}
    )
    assert event.session == "main"
    assert event.context.priority == "normal"
    assert event.content.text == ""
    assert event.trusted is False
    assert event.occurred_at.tzinfo is not None
    assert event.received_at.tzinfo is not None


def test_times_in_other_zones_are_converted_to_utc() -> None:
    """An aware time in another zone is accepted and stored as the same instant in UTC."""
    event = Event.parse(valid(occurred_at="2026-01-01T12:00:00+02:00"))
    assert event.occurred_at == datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert event.occurred_at.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"kind": "userinput"}, "kind"),
        ({"kind": "User.Input"}, "kind"),
        ({"kind": "user."}, "kind"),
        ({"session": "has space"}, "session"),
        ({"session": ""}, "session"),
        ({"session": "-leading-dash"}, "session"),
        ({"occurred_at": "2026-01-01T10:00:00"}, "occurred_at"),
        ({"received_at": datetime(2026, 1, 1, 10, 0)}, "received_at"),
        ({"id": ""}, "id"),
        ({"id": " padded"}, "id"),
        ({"id": "padded\n"}, "id"),
        ({"bogus": 1}, "bogus"),
        ({"channel": ""}, "channel"),
        ({"context": {"priority": "whenever"}}, "context.priority"),
    ],
)
def test_invalid_event_is_refused_naming_the_field(overrides: dict[str, Any], field: str) -> None:
    """A bad event raises EventError whose message names the offending field."""
    with pytest.raises(EventError) as caught:
        Event.parse(valid(**overrides))
    assert f"event field '{field}'" in str(caught.value)


def test_naive_datetime_error_says_how_to_fix() -> None:
    """A naive time is refused with a hint to add a time zone."""
    with pytest.raises(EventError, match="time zone"):
        Event.parse(valid(occurred_at=datetime(2026, 1, 1, 10, 0)))


def test_missing_required_field_is_named() -> None:
    """An event with no source is refused naming 'source'."""
    data = valid()
    del data["source"]
    with pytest.raises(EventError, match="event field 'source'"):
        Event.parse(data)


def test_from_json_refuses_with_event_error() -> None:
    """Bad JSON input is refused with EventError too, not a pydantic error."""
    with pytest.raises(EventError, match="event field 'kind'"):
        Event.from_json('{"id": "x", "kind": "nodot", "source": {"type": "s"}, "channel": "c"}')


def test_user_message_is_a_trusted_user_input() -> None:
    """user_message builds a trusted user.input from the owner with the given text and session."""
    event = user_message("only Beijing data", session="user:alice", channel="chat:web")
    assert event.kind == "user.input"
    assert event.trusted is True
    assert event.source.type == "user"
    assert event.source.principal == "owner"
    assert event.content.text == "only Beijing data"
    assert event.session == "user:alice"
    assert event.channel == "chat:web"
    assert event.id.startswith("msg:")


def test_user_message_ids_are_unique_unless_given() -> None:
    """Two user messages get distinct ids, and an explicit id is kept."""
    assert user_message("a").id != user_message("a").id
    assert user_message("a", event_id="msg:fixed").id == "msg:fixed"


def test_user_message_refuses_a_bad_session() -> None:
    """user_message validates like any event: a bad session name raises EventError."""
    with pytest.raises(EventError, match="event field 'session'"):
        user_message("hi", session="no spaces allowed")


def test_json_round_trip_is_lossless() -> None:
    """An event serialised to JSON and parsed back is equal to the original."""
    event = Event.parse(valid(occurred_at="2026-03-04T05:06:07.123456-05:00"))
    again = Event.from_json(event.to_json())
    assert again == event
    assert again.context.model_extra == {"thread": "t-1"}
    assert again.occurred_at == datetime(
        2026, 3, 4, 5, 6, 7, 123456, tzinfo=timezone(timedelta(hours=-5))
    )


def test_events_are_immutable() -> None:
    """An event cannot be changed after it is made."""
    event = user_message("hi")
    with pytest.raises(ValueError):
        event.id = "other"
