"""One /sync response, reduced to what wakeful acts on: invites, text messages, rooms it
cannot read (end-to-end encrypted), the next token.

Pure: no I/O, so the rules (own messages, edits, notices, reply fallbacks)
are tested on plain dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

# The one filter every /sync is made with: room timelines and invites, nothing else.
SYNC_FILTER: dict[str, Any] = {
    "presence": {"types": []},
    "account_data": {"types": []},
    "room": {
        "timeline": {
            "limit": 100,
            "types": ["m.room.message", "m.room.encrypted", "m.room.member"],
        },
        "state": {"types": ["m.room.member"], "lazy_load_members": True},
        "ephemeral": {"types": []},
        "account_data": {"types": []},
    },
}
# The first sync of an account with no token: only the token (and pending invites) matter;
# the history it would bring is old and must not be answered.
FIRST_SYNC_FILTER: dict[str, Any] = {
    **SYNC_FILTER,
    "room": {**SYNC_FILTER["room"], "timeline": {"limit": 0}},
}


@dataclass(frozen=True)
class Invite:
    room_id: str
    inviter: str
    encrypted: bool = False  # the invite's room state has m.room.encryption
    direct: bool = False  # the inviter marked it a direct chat (is_direct)
    public: bool = False  # anyone may join (join_rule "public"): not a private chat


@dataclass(frozen=True)
class RoomText:
    event_id: str
    room_id: str
    sender: str
    text: str
    occurred_at: datetime | None
    # The thread's root event when the message was written in a thread (m.thread):
    # the reply goes to that thread, not to the main timeline.
    thread_root: str | None = None


@dataclass
class SyncBatch:
    next_batch: str
    invites: list[Invite] = field(default_factory=list)
    messages: list[RoomText] = field(default_factory=list)
    # Rooms we cannot read (no E2EE) → who wrote the first encrypted event there.
    encrypted_rooms: dict[str, str] = field(default_factory=dict)
    gaps: set[str] = field(default_factory=set)  # rooms whose timeline was cut (limited)


def parse_sync(data: dict[str, Any], own_user_id: str) -> SyncBatch:
    batch = SyncBatch(next_batch=str(data["next_batch"]))
    rooms = data.get("rooms") or {}
    for room_id, room in (rooms.get("invite") or {}).items():
        invite = _invite(room_id, room, own_user_id)
        if invite is not None:
            batch.invites.append(invite)
    for room_id, room in (rooms.get("join") or {}).items():
        timeline = room.get("timeline") or {}
        if timeline.get("limited"):
            batch.gaps.add(room_id)
        for event in _since_we_were_invited(timeline.get("events") or [], own_user_id):
            if event.get("type") == "m.room.encrypted":
                sender = event.get("sender")
                if isinstance(sender, str) and sender != own_user_id:
                    batch.encrypted_rooms.setdefault(room_id, sender)
                continue
            message = _text(room_id, event, own_user_id)
            if message is not None:
                batch.messages.append(message)
    return batch


def _since_we_were_invited(events: list[Any], own_user_id: str) -> list[Any]:
    """A room just joined comes with its recent history: only what was said after we
    were invited (or joined, when the invite is out of the window) is for us."""
    cut = 0
    for membership in ("invite", "join"):
        for index, event in enumerate(events):
            if (
                event.get("type") == "m.room.member"
                and event.get("state_key") == own_user_id
                and (event.get("content") or {}).get("membership") == membership
            ):
                cut = index + 1
        if cut:
            return events[cut:]
    return events


def _invite(room_id: str, room: dict[str, Any], own_user_id: str) -> Invite | None:
    """Who invited us, and what the invite's room state (Synapse sends the spec's
    recommended pre-join state: create, join rules, encryption, name …) tells."""
    events = (room.get("invite_state") or {}).get("events") or []
    inviter: str | None = None
    direct = encrypted = public = False
    for event in events:
        content = event.get("content") or {}
        kind = event.get("type")
        if (
            kind == "m.room.member"
            and event.get("state_key") == own_user_id
            and content.get("membership") == "invite"
        ):
            sender = event.get("sender")
            inviter = sender if isinstance(sender, str) else None
            direct = content.get("is_direct") is True
        elif kind == "m.room.encryption":
            encrypted = True
        elif kind == "m.room.join_rules":
            public = content.get("join_rule") == "public"
    if inviter is None:
        return None
    return Invite(room_id, inviter, encrypted=encrypted, direct=direct, public=public)


def _text(room_id: str, event: dict[str, Any], own_user_id: str) -> RoomText | None:
    content = event.get("content") or {}
    relation = content.get("m.relates_to") or {}
    sender = event.get("sender")
    event_id = event.get("event_id")
    if (
        event.get("type") != "m.room.message"
        or not isinstance(sender, str)
        or not isinstance(event_id, str)
        or sender == own_user_id  # our own replies come back in the timeline
        or content.get("msgtype") != "m.text"  # notices are what bots send: no bot loops
        or relation.get("rel_type") == "m.replace"  # an edit
    ):
        return None
    body = content.get("body")
    if not isinstance(body, str) or not body.strip():
        return None
    if "m.in_reply_to" in relation:
        body = _strip_reply_fallback(body)
    stamp = event.get("origin_server_ts")
    occurred = datetime.fromtimestamp(stamp / 1000, UTC) if isinstance(stamp, int) else None
    root = relation.get("event_id") if relation.get("rel_type") == "m.thread" else None
    return RoomText(
        event_id, room_id, sender, body, occurred, root if isinstance(root, str) else None
    )


def _strip_reply_fallback(body: str) -> str:
    """A reply's body starts with the quoted message ("> <@user> …" lines, then a blank line)."""
    lines = body.split("\n")
    if not lines or not lines[0].startswith("> "):
        return body
    rest = lines
    while rest and rest[0].startswith(">"):
        rest = rest[1:]
    if rest and rest[0] == "":
        rest = rest[1:]
    return "\n".join(rest) or body
