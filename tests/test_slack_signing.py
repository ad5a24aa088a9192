"""Slack's v0 signatures: what is accepted, and one clear reason for what is not."""

from __future__ import annotations

import time

import pytest

from tests.fakes.slack_api import SIGNING_SECRET, SlackEventSender, message_envelope
from wakeful.channels.slack.signing import SignatureError, SlackSignature

SENDER = SlackEventSender("http://unused", SIGNING_SECRET)


def lowered(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def test_a_request_signed_as_slack_signs_is_accepted() -> None:
    """The fake signs independently of wakeful's code; the two agree."""
    body, headers = SENDER.request(message_envelope("hi"))
    SlackSignature(SIGNING_SECRET).verify(lowered(headers), body, time.time())


def test_slacks_documented_example_verifies() -> None:
    """The worked example in Slack's "Verifying requests" guide."""
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&"
        b"channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&"
        b"command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
        b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
        b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    headers = {
        "x-slack-request-timestamp": "1531420618",
        "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
    }
    SlackSignature("8f742231b10e8888abcd99yyyzzz85a5").verify(headers, body, 1531420618 + 10)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("wrong secret", "does not match this app's signing secret"),
        ("body changed", "does not match this app's signing secret"),
        ("stale", "more than 5 minutes"),
        ("future", "more than 5 minutes"),
        ("no signature", "missing X-Slack-Request-Timestamp or X-Slack-Signature"),
        ("bad timestamp", "whole seconds since the epoch"),
    ],
)
def test_a_bad_request_is_refused_with_one_reason(change: str, reason: str) -> None:
    """Each fault is named; nothing says what the expected signature was."""
    now = time.time()
    stamp = {"stale": now - 301, "future": now + 301}.get(change, now)
    secret = "not-the-secret" if change == "wrong secret" else SIGNING_SECRET
    body, headers = SENDER.request(message_envelope("hi"), timestamp=stamp, secret=secret)
    headers = lowered(headers)
    if change == "body changed":
        body = body.replace(b"hi", b"ho")
    if change == "no signature":
        del headers["x-slack-signature"]
    if change == "bad timestamp":
        headers["x-slack-request-timestamp"] = "12.5"
    with pytest.raises(SignatureError, match=reason) as caught:
        SlackSignature(SIGNING_SECRET).verify(headers, body, now)
    assert "v0=" not in str(caught.value)


def test_the_window_is_five_minutes_either_way() -> None:
    body, headers = SENDER.request(message_envelope("hi"), timestamp=1_000_000)
    verifier = SlackSignature(SIGNING_SECRET)
    verifier.verify(lowered(headers), body, 1_000_000 + 300)
    verifier.verify(lowered(headers), body, 1_000_000 - 300)
