"""What a /sync response becomes: which timeline events are input and which are not."""

from __future__ import annotations

from typing import Any

from wakeful.channels.matrix.formatting import message_content
from wakeful.channels.matrix.sync_batch import parse_sync

ME = "@bot:example.org"
ALICE = "@alice:example.org"


def _message(event_id: str, sender: str = ALICE, **content: Any) -> dict[str, Any]:
    body = {"msgtype": "m.text", "body": "hi", **content}
    return {
        "type": "m.room.message",
        "event_id": event_id,
        "sender": sender,
        "origin_server_ts": 1_700_000_000_000,
        "content": body,
    }


def _sync(*events: dict[str, Any], limited: bool = False) -> dict[str, Any]:
    timeline = {"events": list(events), "limited": limited}
    return {"next_batch": "s2", "rooms": {"join": {"!r:example.org": {"timeline": timeline}}}}


def test_only_other_peoples_text_messages_are_input() -> None:
    batch = parse_sync(
        _sync(
            _message("$1"),
            _message("$2", sender=ME),
            _message("$3", msgtype="m.notice"),
            _message("$4", **{"m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}}),
            _message("$5", body="   "),
            {"type": "m.room.encrypted", "event_id": "$6", "sender": ALICE, "content": {}},
        ),
        ME,
    )
    assert [m.event_id for m in batch.messages] == ["$1"]
    assert batch.messages[0].occurred_at is not None
    assert batch.encrypted_rooms == {"!r:example.org": ALICE} and batch.next_batch == "s2"


def test_a_reply_loses_its_quoted_fallback() -> None:
    reply = _message(
        "$1",
        body="> <@bot:example.org> the earlier answer\n> second line\n\nthanks!",
        **{"m.relates_to": {"m.in_reply_to": {"event_id": "$0"}}},
    )
    assert parse_sync(_sync(reply), ME).messages[0].text == "thanks!"


def test_a_cut_timeline_is_reported_as_a_gap() -> None:
    assert parse_sync(_sync(_message("$1"), limited=True), ME).gaps == {"!r:example.org"}


def test_invites_name_who_invited_us() -> None:
    member = {"type": "m.room.member", "state_key": ME, "sender": ALICE}
    invite_state = {"events": [{**member, "content": {"membership": "invite"}}]}
    data = {"next_batch": "s3", "rooms": {"invite": {"!i:x": {"invite_state": invite_state}}}}
    [invite] = parse_sync(data, ME).invites
    assert (invite.room_id, invite.inviter) == ("!i:x", ALICE)
    assert not (invite.encrypted or invite.direct or invite.public)
    state = {"state_key": "", "sender": ALICE}
    invite_state["events"] = [
        {**member, "content": {"membership": "invite", "is_direct": True}},
        {**state, "type": "m.room.encryption", "content": {"algorithm": "m.megolm.v1.aes-sha2"}},
        {**state, "type": "m.room.join_rules", "content": {"join_rule": "public"}},
    ]
    [invite] = parse_sync(data, ME).invites
    assert invite.encrypted and invite.direct and invite.public


def test_plain_text_has_no_html_twin_and_markdown_has_one() -> None:
    assert message_content("just words") == {"msgtype": "m.text", "body": "just words"}
    rich = message_content("a *b* <script>")
    assert rich["format"] == "org.matrix.custom.html"
    assert rich["formatted_body"] == "<p>a <em>b</em> &lt;script&gt;</p>"


def _member(membership: str, user: str = ME) -> dict[str, Any]:
    content = {"membership": membership}
    return {"type": "m.room.member", "state_key": user, "sender": ALICE, "content": content}


def test_a_room_just_joined_brings_history_only_what_followed_the_invite_is_input() -> None:
    events = [_message("$old"), _member("invite"), _message("$hi"), _member("join"), _message("$2")]
    assert [m.event_id for m in parse_sync(_sync(*events), ME).messages] == ["$hi", "$2"]
    without_invite = [_message("$old"), _member("join"), _message("$new")]
    assert [m.event_id for m in parse_sync(_sync(*without_invite), ME).messages] == ["$new"]
    others = [_message("$1"), _member("join", user=ALICE), _message("$2")]
    assert [m.event_id for m in parse_sync(_sync(*others), ME).messages] == ["$1", "$2"]
