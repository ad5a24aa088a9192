"""Where a Matrix reply goes: a room's main timeline, or a thread in it.

A chat channel's reply address is one string (:class:`PlatformMessage.address`,
kept with the outbox record and as the place the owner last wrote). For Matrix
it is the room id, followed for a threaded message by the thread's root event
and the event answered, separated by spaces: neither room ids nor event ids
contain one (their grammar has no white space), so the three parts come back
out unambiguously, and a plain room id — what every earlier record holds — is
still a valid address for the main timeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEPARATOR = " "


@dataclass(frozen=True)
class ReplyPlace:
    room_id: str
    thread_root: str | None = None  # the thread's first event; None: the main timeline
    answered: str | None = None  # the event replied to, for clients without threads

    @property
    def address(self) -> str:
        if self.thread_root is None:
            return self.room_id
        return SEPARATOR.join([self.room_id, self.thread_root, self.answered or self.thread_root])

    def relation(self) -> dict[str, Any] | None:
        """The reply's ``m.relates_to``: in the thread, with the reply fallback the spec
        asks for (``is_falling_back``: a client without threads shows a plain reply)."""
        if self.thread_root is None:
            return None
        return {
            "rel_type": "m.thread",
            "event_id": self.thread_root,
            "is_falling_back": True,
            "m.in_reply_to": {"event_id": self.answered or self.thread_root},
        }


def parse_address(address: str) -> ReplyPlace:
    room_id, *thread = address.split(SEPARATOR)
    if len(thread) != 2:
        return ReplyPlace(room_id)
    return ReplyPlace(room_id, thread[0], thread[1])
