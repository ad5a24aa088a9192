"""The /sync long poll of one account: invites joined or declined, messages to events,
encrypted rooms told that wakeful cannot read them (:mod:`.encrypted`).

The ``next_batch`` token is the cursor: it is committed in the same store
transaction as the last event its batch produced (earlier events of the batch go
without it), so a crash anywhere re-reads at most one batch, whose events the
store already knows by id. A batch with no message moves the cursor on its own.

With no token yet (a new account, a new data directory) the first sync asks for
no timeline at all: what was said before wakeful was set up is history, not
questions to answer now. Invites pending then are still acted on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import structlog

from wakeful.channels.chat.inbound import ChatInbound, PlatformMessage
from wakeful.channels.matrix.address import ReplyPlace
from wakeful.channels.matrix.api import MatrixApi, MatrixError
from wakeful.channels.matrix.encrypted import EncryptedRooms
from wakeful.channels.matrix.strangers import StrangerRooms
from wakeful.channels.matrix.sync_batch import (
    FIRST_SYNC_FILTER,
    SYNC_FILTER,
    Invite,
    SyncBatch,
    parse_sync,
)
from wakeful.core.components.context import SendMessage
from wakeful.store.base import ChannelState, Cursor

log = structlog.get_logger(__name__)

BACKOFF_MIN_S = 1.0
BACKOFF_MAX_S = 60.0


@dataclass
class SyncHealth:
    ok: bool = False
    detail: str = "not synced yet"
    synced: int = 0  # /sync answers taken
    messages: int = 0
    failures: int = 0


class MatrixSync:
    """Sync → events for one account, until cancelled; network trouble is retried."""

    def __init__(
        self,
        *,
        api: MatrixApi,
        user_id: str,
        name: str,
        inbound: ChatInbound,
        state: ChannelState,
        login: Callable[[], Awaitable[None]] | None,
        timeout_s: float,
        on_health: Callable[[SyncHealth], None],
        send: SendMessage,
    ) -> None:
        self.api = api
        self.user_id = user_id
        self.name = name
        self.inbound = inbound
        self.state = state
        self._login = login  # logs in again when the homeserver dropped the token
        self.timeout_ms = int(timeout_s * 1000)
        self.cursor_key = f"matrix:{name}:next_batch"
        self.health = SyncHealth()
        self._on_health = on_health
        self.strangers = StrangerRooms(state, name)
        self.encrypted = EncryptedRooms(state, name, inbound, send)

    async def run(self) -> None:
        since = await self.state.get_state(self.cursor_key)
        await self.encrypted.load()
        await self.strangers.rooms()  # the status counts them from the start
        backoff = BACKOFF_MIN_S
        while True:
            try:
                since = await self.sync_once(since)
            except MatrixError as exc:
                self._report(False, f"sync failed: {exc}", failed=True)
                if exc.bad_token and self._login is not None:
                    await self._relogin()
                delay = exc.retry_after_s if exc.retry_after_s is not None else backoff
                log.warning("matrix sync failed", account=self.name, error=str(exc), retry_s=delay)
                await anyio.sleep(delay)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
            else:
                backoff = BACKOFF_MIN_S

    async def sync_once(self, since: str | None) -> str:
        """One /sync and everything it brought; returns the next token."""
        if since is None:
            data = await self.api.sync(None, timeout_ms=0, filter_json=FIRST_SYNC_FILTER)
            batch = parse_sync(data, self.user_id)
            batch.messages.clear()  # the first sync's timeline is history: never answered
            batch.encrypted_rooms.clear()
            log.info("matrix first sync: history skipped", account=self.name)
        else:
            data = await self.api.sync(since, timeout_ms=self.timeout_ms, filter_json=SYNC_FILTER)
            batch = parse_sync(data, self.user_id)
        await self._take(batch, since)
        self._report(True, "syncing")
        return batch.next_batch

    async def _take(self, batch: SyncBatch, since: str | None) -> None:
        for invite in batch.invites:
            await self._answer_invite(invite)
        await self._note_unreadable(batch)
        cursor = Cursor(self.cursor_key, batch.next_batch)
        last = len(batch.messages) - 1
        for number, text in enumerate(batch.messages):
            message = PlatformMessage(
                message_id=text.event_id,
                user_id=text.sender,
                user_name=None,
                address=ReplyPlace(text.room_id, text.thread_root, text.event_id).address,
                text=text.text,
                occurred_at=text.occurred_at,
            )
            here = cursor if number == last else None
            await self.inbound.receive(message, cursor=here)  # an impossible one is passed
            self.health.messages += 1
        if not batch.messages and batch.next_batch != since:
            await self.inbound.advance(cursor)

    async def _answer_invite(self, invite: Invite) -> None:
        """Rooms of allowed (or paired) users are joined; a stranger's too, within the
        bounds of :mod:`.strangers`, to be told their pairing code there; any other
        invite is declined, so nobody can pull the account into rooms without end."""
        if await self.inbound.is_allowed(invite.inviter):
            if await self._join(invite):
                await self._note_encrypted_invite(invite)
            return
        place = await self.strangers.admit(invite, leave=self.api.leave)
        if isinstance(place, str):
            await self._decline(invite, place)
            return
        if not await self._join(invite):
            await self.strangers.forget(invite.room_id)
            return
        # Keyed by the room and when its place was taken: a batch read again sends no
        # second code, a later invite to the same room (its first place given up) does.
        stamp = int(place.joined_at * 1000)
        hello = PlatformMessage(
            message_id=f"invite:{invite.room_id}:{stamp}",
            user_id=invite.inviter,
            user_name=None,
            address=invite.room_id,
            text="",
        )
        await self.inbound.ask_to_pair(hello)
        await self._note_encrypted_invite(invite)

    async def _join(self, invite: Invite) -> bool:
        try:
            await self.api.join(invite.room_id)
        except MatrixError as exc:
            if exc.transient:
                raise  # the whole batch is taken again: its cursor is not committed yet
            log.warning("matrix invite not answered", room=invite.room_id, error=str(exc))
            return False
        log.info(
            "matrix invite joined", account=self.name, room=invite.room_id, inviter=invite.inviter
        )
        return True

    async def _decline(self, invite: Invite, why: str) -> None:
        try:
            await self.api.leave(invite.room_id)
        except MatrixError as exc:
            if exc.transient:
                raise
            log.warning("matrix invite not answered", room=invite.room_id, error=str(exc))
            return
        log.info(
            "matrix invite declined",
            account=self.name,
            room=invite.room_id,
            inviter=invite.inviter,
            why=why,
        )

    async def _note_encrypted_invite(self, invite: Invite) -> None:
        if invite.encrypted:  # told now, before anyone writes something we cannot read
            await self.encrypted.note(invite.room_id, invite.inviter)

    async def _note_unreadable(self, batch: SyncBatch) -> None:
        for room, sender in batch.encrypted_rooms.items():
            await self.encrypted.note(room, sender)
        for room in batch.gaps:
            log.warning("matrix sync skipped part of a busy room's timeline", room=room)

    async def _relogin(self) -> None:
        assert self._login is not None
        try:
            await self._login()
        except MatrixError as exc:
            log.warning("matrix log-in failed", account=self.name, error=str(exc))

    def _report(self, ok: bool, detail: str, *, failed: bool = False) -> None:
        changed = ok != self.health.ok or detail != self.health.detail
        self.health.ok, self.health.detail = ok, detail
        if failed:
            self.health.failures += 1
        else:
            self.health.synced += 1
        if changed:
            self._on_health(self.health)
