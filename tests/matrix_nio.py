"""A person on a real Matrix client library, matrix-nio (with its end-to-end encryption):
what an Element user's client does, without a browser.

nio is asyncio; the tests are plain functions that wait on the homeserver by polling.
So each person owns an event loop and every call runs to its end on it — one loop per
client, as aiohttp wants.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from nio import (  # type: ignore[import-untyped]  # nio ships no py.typed
    AsyncClient,
    AsyncClientConfig,
    EnableEncryptionBuilder,
    LoginResponse,
    MessageDirection,
    RoomCreateResponse,
    RoomMessagesResponse,
    RoomPreset,
    RoomPutStateResponse,
    RoomSendResponse,
    SyncResponse,
)

from tests.synapse_server import MatrixUser

T = TypeVar("T")


class NioPerson:
    """One user logged in on a device of their own, its keys (and crypto store) in ``store``."""

    def __init__(self, homeserver: str, user: MatrixUser, store: Path) -> None:
        store.mkdir(parents=True, exist_ok=True)
        self.user = user
        self._loop = asyncio.new_event_loop()
        config = AsyncClientConfig(encryption_enabled=True, store_sync_tokens=False)
        self.client = AsyncClient(homeserver, user.user_id, store_path=str(store), config=config)

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(call)

    def __enter__(self) -> NioPerson:
        answer = self._run(self.client.login(self.user.password, device_name="nio test"))
        assert isinstance(answer, LoginResponse), answer
        if self.client.should_upload_keys:  # a device of E2EE: its identity keys published
            self._run(self.client.keys_upload())
        self.sync()
        return self

    def __exit__(self, *exc: object) -> None:
        self._run(self.client.close())
        self._loop.close()

    def sync(self) -> None:
        answer = self._run(self.client.sync(timeout=0, full_state=True))
        assert isinstance(answer, SyncResponse), answer

    def open_dm(self, other: str, *, encrypted: bool = False) -> str:
        """A direct chat with ``other`` as Element opens one: a private room, ``is_direct``,
        the other invited, and with ``encrypted`` the m.room.encryption state from the start."""
        state = [EnableEncryptionBuilder().as_dict()] if encrypted else []
        answer = self._run(
            self.client.room_create(
                is_direct=True,
                preset=RoomPreset.trusted_private_chat,
                invite=[other],
                initial_state=state,
            )
        )
        assert isinstance(answer, RoomCreateResponse), answer
        self.sync()  # the client learns the room (and whether it is encrypted)
        return str(answer.room_id)

    def encrypt(self, room_id: str) -> None:
        """Turn the room's encryption on, as a client's room settings do."""
        content = {"algorithm": "m.megolm.v1.aes-sha2"}
        answer = self._run(self.client.room_put_state(room_id, "m.room.encryption", content))
        assert isinstance(answer, RoomPutStateResponse), answer
        self.sync()

    def send_text(self, room_id: str, text: str) -> str:
        """The event's id; in an encrypted room nio sends it as m.room.encrypted."""
        self.sync()
        answer = self._run(
            self.client.room_send(
                room_id,
                "m.room.message",
                {"msgtype": "m.text", "body": text},
                ignore_unverified_devices=True,  # nobody verifies a bot's (missing) device
            )
        )
        assert isinstance(answer, RoomSendResponse), answer
        return str(answer.event_id)

    def texts_from(self, room_id: str, sender: str) -> list[str]:
        """The bodies of ``sender``'s messages, as nio decoded them (plain ones only)."""
        answer = self._run(
            self.client.room_messages(
                room_id, start="", direction=MessageDirection.front, limit=1000
            )
        )
        assert isinstance(answer, RoomMessagesResponse), answer
        return [
            str(event.body)
            for event in answer.chunk
            if event.sender == sender and hasattr(event, "body")
        ]
