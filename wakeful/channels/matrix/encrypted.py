"""End-to-end encrypted rooms: wakeful cannot read them, and says so once per room.

wakeful has no end-to-end encryption (no keys, no device verification): an
``m.room.encrypted`` event is unreadable to it. Silence would look like a broken
bot, so the room is told, once, in plain (unencrypted) text — the homeserver takes
a plain message in an encrypted room and every client shows it — and the room is
listed in the account's status. Once is kept across restarts: the room is recorded
in channel state, and the notice goes through the outbox under a key of its own,
which the outbox never sends twice.
"""

from __future__ import annotations

import json
import time

import structlog

from wakeful.channels.chat.inbound import ChatInbound
from wakeful.core.components.context import SendMessage
from wakeful.store.base import ChannelState
from wakeful.store.outbox.record import NewMessage

log = structlog.get_logger(__name__)

NOTICE = (
    "I can't read this room: its messages are end-to-end encrypted, and wakeful has no "
    "encryption support, so nothing written here reaches me.\n\n"
    "To talk to me, invite me to a room with encryption turned off (a room's encryption "
    "cannot be turned off once it is on)."
)


class EncryptedRooms:
    """The rooms of one account that it cannot read, and the one notice each gets."""

    def __init__(
        self, state: ChannelState, name: str, inbound: ChatInbound, send: SendMessage
    ) -> None:
        self._state = state
        self._name = name
        self._inbound = inbound
        self._send = send
        self._prefix = f"matrix:{name}:encrypted_room:"
        self.rooms: dict[str, float] = {}  # room id → when first seen, for the status
        self._loaded = False

    async def load(self) -> None:
        for key, raw in (await self._state.states_under(self._prefix)).items():
            self.rooms[key[len(self._prefix) :]] = float(json.loads(raw)["since"])
        self._loaded = True

    async def note(self, room_id: str, sender: str) -> None:
        """``sender`` wrote encrypted (or invited us to an encrypted room) in ``room_id``."""
        if not self._loaded:
            await self.load()
        if room_id in self.rooms:
            return
        log.warning(
            "matrix room is end-to-end encrypted: wakeful cannot read it; the room is told "
            "to use an unencrypted room",
            account=self._name,
            room=room_id,
            sender=sender,
        )
        # The outbox first: its key makes the notice once, even if we die before the record.
        await self._send(
            NewMessage(
                session=self._inbound.session_for(sender),
                channel=self._inbound.channel,
                text=NOTICE,
                key=f"matrix:{self._name}:encrypted:{room_id}",
                address=room_id,
            )
        )
        since = time.time()
        await self._state.put_state(self._prefix + room_id, json.dumps({"since": since}))
        self.rooms[room_id] = since

    def status(self) -> str:
        """``N`` or ``N (room ids …)``: what `wakeful status` shows."""
        if not self.rooms:
            return "0"
        ordered = sorted(self.rooms, key=lambda room: self.rooms[room])
        return f"{len(ordered)} ({', '.join(ordered)})"
