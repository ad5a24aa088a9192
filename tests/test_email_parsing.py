"""Parsing mail into events, the calendar helpers and the email configuration."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.mail_servers import make_message
from wakeful.app.config import ConfigError, load_settings
from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.email.ics import load_entries
from wakeful.channels.email.inbound import build_event, skip_reason, split_email_id
from wakeful.channels.email.message import parse_email

INVITE = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nUID:u1\r\n"
    "DTSTART:20300304T143000Z\r\nDTEND:20300304T153000Z\r\nSUMMARY:Sync\r\n"
    "ORGANIZER:mailto:pat@example.test\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


def account(**extra: object) -> EmailAccountConfig:
    return EmailAccountConfig.model_validate(
        {"name": "work", "imap_host": "h", "username": "me@example.test", **extra}
    )


def test_html_invitation_and_attachments_are_parsed() -> None:
    """HTML becomes text, the .ics part becomes an invitation, attachments are listed."""
    raw = make_message(
        "Pat <pat@example.test>",
        "Meet?",
        "plain",
        html="<p>Hello <b>there</b></p><script>x()</script>",
        calendar=INVITE,
        attachment=("a.pdf", b"1234"),
    )
    mail = parse_email(raw)
    assert mail.sender == "pat@example.test" and mail.text == "plain"
    assert mail.invitation is not None and mail.invitation["summary"] == "Sync"
    assert mail.invitation["start"] == "2030-03-04T14:30:00+00:00"
    names = [a["name"] for a in mail.attachments]
    assert names == ["invite.ics", "a.pdf"]
    html_only = parse_email(
        b"From: a@b.test\r\nContent-Type: text/html\r\n\r\n<p>Hi <a href='https://x.test'>link</a>"
        b"</p><style>p{}</style>"
    )
    assert html_only.text == "Hi link <https://x.test>"


def test_long_bodies_are_capped_with_a_note() -> None:
    """A body over body_max_chars is cut and says how to read the rest."""
    mail = parse_email(make_message("a@b.test", "long", "x" * 5000))
    event = build_event(account(body_max_chars=1000), "INBOX", 7, 9, mail)
    assert event.id == "imap:work:INBOX:7:9"
    assert "body truncated: showing 1000 of 5000" in event.content.text
    assert event.content.data["body_truncated"] is True and not event.source.trusted


def test_filters_and_ids() -> None:
    """Sender and subject filters give a reason; ids round-trip, bad ones are explained."""
    mail = parse_email(make_message("promo@ads.test", "Newsletter 5", "x"))
    assert skip_reason(account(ignore_senders=["*@ads.test"]), mail) is not None
    assert skip_reason(account(ignore_subjects=["^Newsletter"]), mail) is not None
    assert skip_reason(account(only_senders=["boss@*"]), mail) is not None
    assert skip_reason(account(), mail) is None
    assert split_email_id("imap:work:Lists:x:5:6") == ("work", "Lists:x", 5, 6)
    with pytest.raises(ValueError, match="not an email id"):
        split_email_id("msg:123")


def test_recurring_calendar_events_are_expanded(tmp_path: Path) -> None:
    """A weekly event appears once per week inside the window."""
    (tmp_path / "cal.ics").write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:w\r\n"
        "DTSTART:20300101T090000Z\r\nDTEND:20300101T093000Z\r\nRRULE:FREQ=WEEKLY\r\n"
        "SUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    start, end = datetime(2030, 1, 1, tzinfo=UTC), datetime(2030, 1, 22, tzinfo=UTC)
    entries = load_entries(tmp_path, start, end)
    assert [e.start.day for e in entries] == [1, 8, 15]


def test_email_config_errors_name_the_key(tmp_path: Path) -> None:
    """A bad filter regex or an unknown key is refused with the key's name."""
    config = tmp_path / "w.toml"
    config.write_text(
        '[[email.accounts]]\nname = "w"\nimap_host = "h"\nusername = "u"\n'
        'ignore_subjects = ["(unclosed"]\n'
    )
    with pytest.raises(ConfigError, match="ignore_subjects"):
        load_settings(config)
    config.write_text('[[email.accounts]]\nname = "w"\nimap_host = "h"\nusername = "u"\nidle = 1\n')
    with pytest.raises(ConfigError, match="idle"):
        load_settings(config)
