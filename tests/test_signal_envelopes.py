"""signal-cli envelopes → messages: who wrote, where the answer goes, what was said."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from wakeful.channels.signal.api import StreamEvent, receive_params
from wakeful.channels.signal.envelopes import parse_envelope, recipient_params, with_mentions

NUMBER, ACI = "+15552223333", "0d2e5f4c-7b1a-4c3e-9f6d-2a8b1c0e3d4f"
GROUP = "Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI="


def envelope(data: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "source": NUMBER,
        "sourceNumber": NUMBER,
        "sourceUuid": ACI.upper(),
        "sourceName": "Owner",
        "timestamp": 1631458508784,
        **fields,
    }
    if data is not None:
        body["dataMessage"] = {"timestamp": 1631458508784, **data}
    return {"envelope": body, "account": "+15550001111"}


def test_the_message_id_is_signals_own_whatever_the_owner_listed() -> None:
    by_number = parse_envelope(envelope({"message": "hi"}), [NUMBER])
    by_aci = parse_envelope(envelope({"message": "hi"}), [ACI])
    assert by_number is not None and by_aci is not None
    assert by_number.message.message_id == by_aci.message.message_id == f"{ACI}:1631458508784"
    assert (by_number.message.user_id, by_aci.message.user_id) == (NUMBER, ACI)
    assert by_number.message.address == NUMBER and by_aci.message.address == ACI


def test_a_group_message_is_answered_in_the_group() -> None:
    found = parse_envelope(envelope({"message": "hi", "groupInfo": {"groupId": GROUP}}), [NUMBER])
    assert found is not None and found.group_id == GROUP
    assert found.message.address == f"group:{GROUP}"
    assert recipient_params(found.message.address) == {"groupId": GROUP}
    assert recipient_params(NUMBER) == {"recipient": [NUMBER]}


def test_what_says_nothing_is_no_message() -> None:
    assert parse_envelope(envelope(), [NUMBER]) is None  # a receipt or typing notice
    assert parse_envelope(envelope({"message": None, "attachments": []}), [NUMBER]) is None
    assert parse_envelope(envelope({"message": "x"}, timestamp="soon"), [NUMBER]) is None
    assert parse_envelope({"account": "+1"}, [NUMBER]) is None


def test_an_attachment_only_message_is_its_reference() -> None:
    voice = {"contentType": "audio/aac", "id": "x.aac", "size": 1200}
    found = parse_envelope(envelope({"message": None, "attachments": [voice]}), [NUMBER])
    assert found is not None
    assert found.message.text == "[attachment: audio/aac, 1200 bytes, id x.aac]"


def test_mentions_become_names() -> None:
    text = "\ufffc what do you think, \ufffc?"
    mentions = [
        {"name": "Wakeful", "number": "+15550001111", "start": 0, "length": 1},
        {"name": "Ann", "number": "+15554445555", "start": 21, "length": 1},
    ]
    assert with_mentions(text, mentions) == "@Wakeful what do you think, @Ann?"
    # Counted in UTF-16 units, as Signal counts: an emoji before a mention is two.
    assert with_mentions("😀 \ufffc", [{"name": "Ann", "start": 3, "length": 1}]) == "😀 @Ann"
    assert with_mentions("no one", [{"name": "Ann", "start": 40, "length": 1}]) == "no one"


@given(st.text(max_size=50), st.lists(st.tuples(st.integers(-5, 60), st.integers(0, 5))))
def test_mentions_never_break_the_text(text: str, spans: list[tuple[int, int]]) -> None:
    mentions = [{"name": "N", "start": start, "length": length} for start, length in spans]
    assert isinstance(with_mentions(text, mentions), str)


def test_receive_events_in_every_shape_signal_cli_sends() -> None:
    params = envelope({"message": "hi"})
    sse = StreamEvent("1-1", "receive", json.dumps(params))
    notification = StreamEvent(
        None, "receive", json.dumps({"jsonrpc": "2.0", "method": "receive", "params": params})
    )
    subscribed = {"jsonrpc": "2.0", "method": "receive",
                  "params": {"subscription": 0, "result": params}}  # fmt: skip
    wrapped = StreamEvent(None, "receive", json.dumps(subscribed))
    assert receive_params(sse) == receive_params(notification) == receive_params(wrapped) == params
    assert receive_params(StreamEvent("1-2", "other", json.dumps(params))) is None
    assert receive_params(StreamEvent("1-3", "receive", "not json")) is None
