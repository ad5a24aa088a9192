"""wakeful's Matrix calls against a real Synapse: login, sync, invites, sends, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.synapse_server import MatrixTestClient, SynapseServer
from wakeful.channels.matrix.api import MatrixApi, MatrixError, error_from
from wakeful.channels.matrix.formatting import message_content
from wakeful.channels.matrix.outgoing import MatrixClient, delivery_error
from wakeful.channels.matrix.sync_batch import FIRST_SYNC_FILTER, SYNC_FILTER, parse_sync
from wakeful.core.outbox.channels import NeverDeliverable, TryLater
from wakeful.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio


async def test_password_login_as_a_fixed_device_and_whoami(synapse: SynapseServer) -> None:
    bot = synapse.register()
    api = MatrixApi(synapse.url)
    try:
        assert await api.login(bot.user_id, bot.password, "WAKEFUL_T") == bot.user_id
        assert await api.whoami() == bot.user_id
        assert await api.login(bot.user_id, bot.password, "WAKEFUL_T") == bot.user_id
        devices = await api._call("GET", "/devices")
        assert [d["device_id"] for d in devices["devices"]].count("WAKEFUL_T") == 1
    finally:
        await api.aclose()


async def test_a_wrong_password_and_a_bad_token_are_errors_with_the_errcode(
    synapse: SynapseServer,
) -> None:
    bot = synapse.register()
    api = MatrixApi(synapse.url)
    try:
        with pytest.raises(MatrixError) as refused:
            await api.login(bot.user_id, "not-it", "D")
        assert refused.value.errcode == "M_FORBIDDEN" and not refused.value.transient
    finally:
        await api.aclose()
    api = MatrixApi(synapse.url, access_token="syt_not_a_token")
    try:
        with pytest.raises(MatrixError) as unknown:
            await api.whoami()
        assert unknown.value.bad_token and unknown.value.errcode == "M_UNKNOWN_TOKEN"
    finally:
        await api.aclose()


async def test_unreachable_homeserver_is_transient() -> None:
    from tests.daemon_process import free_port

    api = MatrixApi(f"http://127.0.0.1:{free_port()}", access_token="x")
    try:
        with pytest.raises(MatrixError) as error:
            await api.whoami()
        assert error.value.status == 0 and error.value.transient
    finally:
        await api.aclose()


async def _sync(api: MatrixApi, since: str | None, me: str, first: bool = False) -> Any:
    data = await api.sync(
        since, timeout_ms=0, filter_json=FIRST_SYNC_FILTER if first else SYNC_FILTER
    )
    return parse_sync(data, me)


async def test_first_sync_skips_history_then_new_messages_and_invites_arrive(
    synapse: SynapseServer,
) -> None:
    bot, alice = synapse.register(), synapse.register()
    person = MatrixTestClient(synapse.url, alice)
    api = MatrixApi(synapse.url, access_token=bot.access_token)
    try:
        room = person.create_room([bot.user_id])
        await api.join(room)
        person.send_text(room, "old news")
        first = await _sync(api, None, bot.user_id, first=True)
        assert first.messages == [] and first.next_batch

        other = person.create_room([bot.user_id])
        sent = person.send_text(room, "**hello** bot")
        batch = await _sync(api, first.next_batch, bot.user_id)
        assert [(m.event_id, m.sender, m.text) for m in batch.messages] == [
            (sent, alice.user_id, "**hello** bot")
        ]
        assert [(i.room_id, i.inviter) for i in batch.invites] == [(other, alice.user_id)]

        content = message_content("**hi** back")
        reply = await api.send_message(room, "wakeful-1-0", content)
        assert await api.send_message(room, "wakeful-1-0", content) == reply  # a retry
        mine = await _sync(api, batch.next_batch, bot.user_id)
        assert mine.messages == []  # own messages are not input
        sent_back = person.replies_from(room, bot.user_id)
        assert [e["event_id"] for e in sent_back] == [reply]
        assert sent_back[0]["content"]["formatted_body"] == "<p><strong>hi</strong> back</p>"

        await api.leave(other)
        assert person.members(other)[bot.user_id] == "leave"
        await api.typing(room, bot.user_id, timeout_ms=5000)
    finally:
        await api.aclose()
        person.close()


async def test_sending_into_a_room_the_bot_is_not_in_is_forbidden(synapse: SynapseServer) -> None:
    bot, alice = synapse.register(), synapse.register()
    person = MatrixTestClient(synapse.url, alice)
    api = MatrixApi(synapse.url, access_token=bot.access_token)
    try:
        room = person.create_room()
        with pytest.raises(MatrixError) as error:
            await api.send_message(room, "t1", message_content("hi"))
        assert error.value.errcode == "M_FORBIDDEN" and not error.value.transient
    finally:
        await api.aclose()
        person.close()


async def test_the_client_sends_each_ref_once_and_maps_refusals(
    synapse: SynapseServer, tmp_path: Path
) -> None:
    bot, alice = synapse.register(), synapse.register()
    person = MatrixTestClient(synapse.url, alice)
    api = MatrixApi(synapse.url, access_token=bot.access_token)
    store = await SqliteStore(tmp_path / "wakeful.sqlite").open()
    try:
        client = MatrixClient(api, bot.user_id, "home", store)
        room = person.create_room([bot.user_id])
        await api.join(room)
        for _ in range(3):  # a retry after a crash sends the same piece again
            await client.send_text(room, "the _answer_", ref="7.0")
        await client.send_text(room, "the _answer_", ref="8.0")  # another message
        assert [e["content"]["body"] for e in person.replies_from(room, bot.user_id)] == [
            "the _answer_",
            "the _answer_",
        ]
        prefix = await store.get_state("matrix:home:txn_prefix")
        again = MatrixClient(api, bot.user_id, "home", store)  # after a restart: same ids
        assert await again.txn_id("7.0") == f"wakeful.{prefix}.7.0"
        with pytest.raises(NeverDeliverable, match="M_FORBIDDEN"):
            await client.send_text(person.create_room(), "hi", ref="9.0")
        await client.send_typing(person.create_room())  # refused: logged, never raised
    finally:
        await store.aclose()
        await api.aclose()
        person.close()


def test_rate_limits_and_server_errors_are_try_later_refusals_never() -> None:
    limited = httpx.Response(429, json={"errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": 1500})
    error = error_from(limited)
    later = delivery_error(error)
    assert isinstance(later, TryLater) and later.retry_after_s == 1.5
    assert isinstance(delivery_error(error_from(httpx.Response(502, text="<html>"))), TryLater)
    unknown = error_from(httpx.Response(401, json={"errcode": "M_UNKNOWN_TOKEN", "error": "gone"}))
    assert isinstance(delivery_error(unknown), TryLater)  # a log-in again fixes it
    for refusal in (
        httpx.Response(403, json={"errcode": "M_FORBIDDEN", "error": "not in room"}),
        httpx.Response(404, json={"errcode": "M_NOT_FOUND", "error": "no room"}),
        httpx.Response(413, json={"errcode": "M_TOO_LARGE", "error": "too big"}),
    ):
        assert isinstance(delivery_error(error_from(refusal)), NeverDeliverable)
