"""Invites from strangers: a direct chat to tell them their pairing code in, within bounds.

A stranger (neither allowed nor paired) who invites the account to a room is asking
to talk: the room is joined and their pairing code posted there, as Telegram or
Slack answer a stranger's first message, so they need not share a room with the
owner (where the code would be public). The code is the chat layer's pairing
(:mod:`wakeful.channels.chat.pairing`): one live code per user, told again at most
every ten minutes, listed by `wakeful pairing list`.

Bounded, because a Matrix account costs nothing to make and each joined room is
kept: only a private direct chat (``is_direct``, not public), one room per stranger
while their code waits, at most ``MAX_STRANGER_ROOMS`` such rooms per account, and a
denied user's invites are declined. A room is a
stranger's until they are approved (then it is simply theirs) or denied, or their
code expires unapproved: then it is left, at the next stranger's invite, which
frees its place. Further invites are declined while every place is taken.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from wakeful.channels.chat.pairing import Pairing
from wakeful.channels.matrix.api import MatrixError
from wakeful.channels.matrix.sync_batch import Invite
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

# Rooms per account joined for strangers waiting for the owner's decision. A person
# rarely has more than a few people waiting at once; approving or denying frees a place.
MAX_STRANGER_ROOMS = 5


@dataclass(frozen=True)
class StrangerRoom:
    room_id: str
    user_id: str
    joined_at: float


class StrangerRooms:
    """The rooms one account joined for strangers, kept in channel state."""

    def __init__(self, state: ChannelState, name: str) -> None:
        self._state = state
        self._name = name
        self._prefix = f"matrix:{name}:stranger_room:"
        self._pairing = Pairing(state)
        self.waiting = 0  # rooms held at the last look, for the status

    async def rooms(self) -> list[StrangerRoom]:
        found = []
        for key, raw in (await self._state.states_under(self._prefix)).items():
            record = json.loads(raw)
            found.append(StrangerRoom(key[len(self._prefix) :], record["user"], record["at"]))
        self.waiting = len(found)
        return sorted(found, key=lambda room: room.joined_at)

    async def admit(
        self, invite: Invite, *, leave: Callable[[str], Awaitable[None]]
    ) -> StrangerRoom | str:
        """The room's place (recorded before the join, so a crash never holds a room
        uncounted), or why the invite is declined. Rooms no longer waiting are left
        first (``leave``), so their places count as free."""
        room_id, user_id = invite.room_id, invite.inviter
        if not invite.direct or invite.public:
            # In a group room every other stranger who wrote would be sent a code too:
            # a stranger could drag the account into a busy room to spam its members.
            return "a stranger's invite is joined only to a private direct chat"
        if await self._pairing.is_denied("matrix", self._name, user_id):
            return "the owner denied this user"
        rooms = await self._sweep(leave)
        for room in rooms:
            if room.room_id == room_id and room.user_id == user_id:
                return room  # taken again (a batch read twice): the same place
            if room.user_id == user_id:
                return f"this user's pairing code already waits in {room.room_id}"
        if len(rooms) >= MAX_STRANGER_ROOMS:
            return (
                f"{len(rooms)} strangers already wait for pairing (at most "
                f"{MAX_STRANGER_ROOMS}): approve or deny them (`wakeful pairing list`)"
            )
        room = StrangerRoom(room_id, user_id, time.time())
        record = json.dumps({"user": user_id, "at": room.joined_at})
        await self._state.put_state(self._prefix + room_id, record)
        self.waiting = len(rooms) + 1
        return room

    async def forget(self, room_id: str) -> None:
        await self._state.put_state(self._prefix + room_id, None)
        self.waiting = max(0, self.waiting - 1)

    async def _sweep(self, leave: Callable[[str], Awaitable[None]]) -> list[StrangerRoom]:
        """The rooms still waiting: an approved user's room is no longer a stranger's
        (kept, uncounted); a denied user's, or one whose code expired, is left."""
        waiting_users = {
            request.user_id
            for request in await self._pairing.pending()
            if request.platform == "matrix" and request.name == self._name
        }
        kept = []
        for room in await self.rooms():
            if room.user_id in waiting_users:
                kept.append(room)
                continue
            if not await self._pairing.is_paired("matrix", self._name, room.user_id):
                try:
                    await leave(room.room_id)
                except MatrixError as exc:
                    if exc.transient:  # still joined: its place stays taken until next time
                        kept.append(room)
                        continue
                log.info(
                    "matrix stranger's room left: not waiting for pairing any more",
                    account=self._name,
                    room=room.room_id,
                    user=room.user_id,
                )
            await self._state.put_state(self._prefix + room.room_id, None)
        self.waiting = len(kept)
        return kept
