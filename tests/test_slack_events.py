"""Events API bodies → a message for the agent, a challenge, or ignored with a reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fakes.slack_api import BOT_USER_ID, message_envelope, url_verification
from wakeful.channels.chat.inbound import PlatformMessage
from wakeful.channels.slack.events import BadEnvelope, Ignored, UrlVerification, parse_body


def parse(envelope: dict[str, Any]) -> object:
    return parse_body(json.dumps(envelope).encode(), BOT_USER_ID)


def test_a_dm_is_a_message_answered_in_the_conversation() -> None:
    envelope = message_envelope("hello &lt;there&gt;", user="U1", channel="D1", ts="1700000000.1")
    message = parse(envelope)
    assert isinstance(message, PlatformMessage)
    assert (message.message_id, message.user_id, message.address, message.text) == (
        "D1:1700000000.1",
        "U1",
        "D1",
        "hello <there>",
    )
    assert message.occurred_at is not None and message.occurred_at.timestamp() == 1700000000.1


def test_a_mention_in_a_channel_the_bot_reads_is_one_message() -> None:
    """Slack sends it as a `message` and an `app_mention`, with two event ids and one ts."""
    text = f"<@{BOT_USER_ID}> deploy?"
    common = {"channel": "C1", "ts": "1700000000.3"}
    as_message = parse(message_envelope(text, channel_type="channel", **common))
    as_mention = parse(message_envelope(text, event_type="app_mention", **common))
    assert isinstance(as_message, PlatformMessage) and isinstance(as_mention, PlatformMessage)
    assert as_message.message_id == as_mention.message_id == "C1:1700000000.3"
    assert as_message.address == as_mention.address == "C1/1700000000.3"
    assert as_message.text == as_mention.text == "deploy?"


def test_a_channel_message_is_answered_in_a_thread_under_it() -> None:
    envelope = message_envelope("hi", channel="C1", channel_type="channel", ts="1700000000.2")
    message = parse(envelope)
    assert isinstance(message, PlatformMessage) and message.address == "C1/1700000000.2"


@pytest.mark.parametrize("channel_type", ["im", "channel"])
def test_a_message_in_a_thread_is_answered_in_that_thread(channel_type: str) -> None:
    envelope = message_envelope(
        "hi", channel="C1", channel_type=channel_type, ts="1700000000.9", thread_ts="1700000000.1"
    )
    message = parse(envelope)
    assert isinstance(message, PlatformMessage) and message.address == "C1/1700000000.1"


def test_an_app_mention_drops_the_leading_mention() -> None:
    envelope = message_envelope(
        f"<@{BOT_USER_ID}> what is up?", event_type="app_mention", channel="C1", ts="17.5"
    )
    message = parse(envelope)
    assert isinstance(message, PlatformMessage)
    assert (message.text, message.address) == ("what is up?", "C1/17.5")


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"bot_id": "B999"}, "a bot's message"),
        ({"subtype": "bot_message"}, "message subtype 'bot_message'"),
        ({"subtype": "message_changed"}, "message subtype 'message_changed'"),
        ({"user": BOT_USER_ID}, "the bot's own message"),
        ({"type": "reaction_added"}, "event type 'reaction_added'"),
    ],
)
def test_what_no_person_wrote_to_the_bot_is_ignored(fields: dict[str, Any], reason: str) -> None:
    envelope = message_envelope("hi")
    envelope["event"].update(fields)
    assert parse(envelope) == Ignored(reason)


def test_slacks_rate_limit_notice_is_ignored_with_a_warning() -> None:
    notice = {"token": "t", "type": "app_rate_limited", "team_id": "T1", "api_app_id": "A1",
              "minute_rate_limited": 1518467820}  # fmt: skip
    assert parse(notice) == Ignored("Slack rate-limited this app's events (app_rate_limited)", True)


def test_url_verification_is_its_challenge() -> None:
    assert parse(url_verification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")) == (
        UrlVerification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"type": "event_callback", "event": {}}', "needs `event_id`"),
    ],
)
def test_a_body_that_is_no_envelope_says_what_is_wrong(body: bytes, reason: str) -> None:
    with pytest.raises(BadEnvelope, match=reason):
        parse_body(body, None)
