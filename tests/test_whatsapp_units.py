"""WhatsApp's pure parts: the webhook payload, the signature, the error sorting, the
formatting and splitting of replies."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fakes.whatsapp_api import (
    APP_SECRET,
    PHONE_NUMBER_ID,
    Sent,
    button_reply,
    hub_signature,
    notification,
    text_message,
)
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.chat.decisions import DecisionRequest
from wakeful.channels.whatsapp.client import (
    MAX_TEXT_CHARS,
    BadCredentials,
    PairRateLimited,
    WindowClosed,
    sorted_error,
    to_whatsapp,
)
from wakeful.channels.whatsapp.payload import BadPayload, parse_notification
from wakeful.channels.whatsapp.signing import AppSignature, SignatureError
from wakeful.core.outbox.channels import NeverDeliverable, TryLater

OWNER = "447700900123"


def parsed(document: dict[str, object]) -> object:
    return parse_notification(json.dumps(document).encode(), PHONE_NUMBER_ID)


def test_a_text_message_is_its_body_from_its_sender_with_their_name() -> None:
    message = text_message("hello there", sender=OWNER, message_id="wamid.A1", at=1749416383)
    found = parse_notification(
        json.dumps(notification(message, names={OWNER: "Ada"})).encode(), PHONE_NUMBER_ID
    )
    [item] = found.messages
    assert (item.message.message_id, item.message.user_id, item.message.address) == (
        "wamid.A1",
        OWNER,
        OWNER,
    )
    assert (item.message.text, item.message.user_name, item.sent_at) == (
        "hello there",
        "Ada",
        1749416383.0,
    )
    assert item.press is None


def test_an_approve_button_reply_is_a_decision() -> None:
    notice = Sent(
        OWNER,
        "interactive",
        {
            "interactive": {
                "action": {
                    "buttons": [
                        {"type": "reply", "reply": {"id": "approve:k3fwz2qp", "title": "Approve"}},
                        {"type": "reply", "reply": {"id": "deny:k3fwz2qp", "title": "Deny"}},
                    ]
                },
                "body": {"text": "may I?"},
            }
        },
        "wamid.OUT1",
    )
    found = parse_notification(
        json.dumps(notification(button_reply(notice, "deny:k3fwz2qp", sender=OWNER))).encode(),
        PHONE_NUMBER_ID,
    )
    [item] = found.messages
    assert item.press == DecisionRequest("deny", "k3fwz2qp")
    assert item.message.text == "Deny"


@pytest.mark.parametrize(
    ("kind", "part", "text"),
    [
        (
            "image",
            {"id": "1", "mime_type": "image/jpeg", "caption": "my cat"},
            "[sent an image, which this channel cannot show, captioned:] my cat",
        ),
        (
            "audio",
            {"id": "2", "mime_type": "audio/ogg", "voice": True},
            "[sent a voice message or audio, which this channel cannot show]",
        ),
        (
            "location",
            {"latitude": 51.5, "longitude": -0.12, "name": "Home"},
            "[shared a location: Home, 51.5, -0.12]",
        ),
        ("reaction", {"message_id": "wamid.OUT1", "emoji": "👍"}, "[reacted 👍 to a message]"),
        (
            "unsupported",
            {},
            "[sent a message of type 'unsupported', which this channel cannot show]",
        ),
    ],
)
def test_other_kinds_become_a_short_description(
    kind: str, part: dict[str, object], text: str
) -> None:
    message = {"from": OWNER, "id": "wamid.X", "timestamp": "1749416383", "type": kind, kind: part}
    [item] = parse_notification(
        json.dumps(notification(message)).encode(), PHONE_NUMBER_ID
    ).messages
    assert item.message.text == text


def test_statuses_and_other_numbers_are_not_messages() -> None:
    statuses = [
        {
            "id": "wamid.OUT1",
            "status": "failed",
            "timestamp": "1",
            "recipient_id": OWNER,
            "errors": [{"code": 131047, "title": "Re-engagement message"}],
        }
    ]
    found = parse_notification(
        json.dumps(notification(statuses=statuses)).encode(), PHONE_NUMBER_ID
    )
    assert found.messages == [] and found.statuses[0].window_closed
    other = notification(text_message("x", sender=OWNER), phone_number_id="1")
    assert parse_notification(json.dumps(other).encode(), PHONE_NUMBER_ID).messages == []


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"object": "whatsapp_business_account"}'])
def test_a_body_that_is_no_notification_is_refused(body: bytes) -> None:
    with pytest.raises(BadPayload):
        parse_notification(body, PHONE_NUMBER_ID)


def test_the_signature_is_metas_hmac_of_the_raw_body() -> None:
    body = b'{"object":"whatsapp_business_account","entry":[]}'
    signature = AppSignature(APP_SECRET)
    signature.verify(hub_signature(APP_SECRET, body), body)
    for given_header in (
        None,
        "",
        hub_signature("other", body),
        hub_signature(APP_SECRET, body + b" "),
    ):
        with pytest.raises(SignatureError):
            signature.verify(given_header, body)


def graph_error(
    status: int, code: int | None, headers: dict[str, str] | None = None
) -> httpx.Response:
    error = (
        {}
        if code is None
        else {"error": {"message": f"(#{code}) x", "code": code, "error_data": {"details": "why"}}}
    )
    return httpx.Response(status, json=error, headers=headers)


@pytest.mark.parametrize(
    ("status", "code", "kind", "wait"),
    [
        (400, 130429, TryLater, 2.0),
        (400, 131056, PairRateLimited, 6.0),
        (429, 4, TryLater, 2.0),
        (503, None, TryLater, None),
        (500, 131000, TryLater, None),
        (400, 131047, WindowClosed, None),
        (401, 190, BadCredentials, None),
        (403, 10, BadCredentials, None),
        (400, 131026, NeverDeliverable, None),
        (400, 100, NeverDeliverable, None),
    ],
)
def test_graph_errors_are_sorted_for_the_outbox(
    status: int, code: int | None, kind: type[Exception], wait: float | None
) -> None:
    failure = sorted_error("sending", graph_error(status, code))
    assert type(failure) is kind
    if isinstance(failure, TryLater):
        assert failure.retry_after_s == wait


def test_a_retry_after_header_is_honoured() -> None:
    failure = sorted_error("sending", graph_error(429, 4, {"Retry-After": "30"}))
    assert isinstance(failure, TryLater) and failure.retry_after_s == 30.0


def test_markdown_becomes_whatsapp_formatting() -> None:
    text = "# Plan\n**bold** and __it__ and ~~old~~ and `**code**`\n```\n**kept**\n```"
    assert (
        to_whatsapp(text) == "*Plan*\n*bold* and _it_ and ~old~ and `**code**`\n```\n**kept**\n```"
    )


@given(st.text(alphabet=st.sampled_from("ab *_~`#\n"), max_size=300))
def test_formatting_never_lengthens_a_piece(text: str) -> None:
    assert len(to_whatsapp(text)) <= len(text)


@given(st.text(alphabet=st.sampled_from("ab *_~`#\né漢\t"), min_size=1, max_size=12_000))
def test_every_piece_fits_whatsapps_limit_and_nothing_is_lost(text: str) -> None:
    """Split at 4,096 characters, then formatted: each piece within the limit; without
    code fences (which a cut closes and reopens) the pieces hold every non-space
    character of the reply, in order."""
    pieces = split_message(text, MAX_TEXT_CHARS)
    assert all(len(to_whatsapp(piece)) <= MAX_TEXT_CHARS for piece in pieces)
    if "```" not in text:
        assert "".join("".join(piece.split()) for piece in pieces) == "".join(text.split())
