"""A person talks to wakeful over Matrix, on a real Synapse, through a real `wakeful run`."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer, Reply
from tests.matrix_daemon import answer_tags, matrix_scene
from tests.synapse_server import MatrixTestClient, SynapseServer


def said_to_model(model_server: FakeModelServer, request: int) -> str:
    messages = model_server.requests[request].body["messages"]
    return " ".join(str(m["content"]) for m in messages if m["role"] == "user")


def test_an_allowed_users_message_reaches_the_model_once_and_the_reply_lands_once(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with matrix_scene(synapse, tmp_path, model_server.base_url) as scene:
        with DaemonProcess(scene.config, scene.port) as daemon:
            room = scene.room_with_bot()
            scene.wait_joined(room)
            scene.owner_client.send_text(room, "hello there, msg-1")
            [reply] = scene.wait_replies(room, 1)
            assert reply["content"]["body"] == "**got** msg-1"
            assert reply["content"]["formatted_body"] == "<p><strong>got</strong> msg-1</p>"
            assert daemon.stop() == 0
        assert len(model_server.requests) == 1
        assert "hello there, msg-1" in said_to_model(model_server, 0)
        assert len(scene.bot_replies(room)) == 1
        assert scene.bot.access_token not in "\n".join(daemon.lines)


def test_an_unknown_user_is_asked_to_pair_and_reaches_the_model_only_once_approved(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    stranger = synapse.register()
    with matrix_scene(synapse, tmp_path, model_server.base_url) as scene:
        with (
            DaemonProcess(scene.config, scene.port) as daemon,
            MatrixTestClient(synapse.url, stranger) as other,
        ):
            shared = scene.room_with_bot(stranger)  # (a stranger's own DM: test_matrix_strangers)
            scene.wait_joined(shared)
            other.send_text(shared, "let me in")
            [reply] = scene.wait_replies(shared, 1)
            assert "pairing code" in reply["content"]["body"]
            code = re.search(r"^([A-Z0-9]{4}-[A-Z0-9]{4})$", reply["content"]["body"], re.M)
            assert code is not None, reply["content"]["body"]
            with daemon.client() as api:
                pending = api.get("/api/pairing").json()["pending"]
            assert [(p["platform"], p["user_id"]) for p in pending] == [
                ("matrix", stranger.user_id)
            ]
            assert model_server.requests == []
            answer_tags(model_server)
            with daemon.client() as api:  # the owner approves: from now on they are let in
                assert api.post(f"/api/pairing/matrix/{code.group(1)}").status_code == 200
            assert "paired" in scene.wait_replies(shared, 2)[1]["content"]["body"]
            other.send_text(shared, "thanks msg-7")
            assert scene.wait_replies(shared, 3)[2]["content"]["body"] == "**got** msg-7"
            assert daemon.stop() == 0
        assert len(model_server.requests) == 1


def test_restart_resumes_from_next_batch_without_answering_again(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with matrix_scene(synapse, tmp_path, model_server.base_url) as scene:
        room = scene.room_with_bot()
        with MatrixTestClient(synapse.url, scene.bot) as bot:
            bot.join(room)  # in the room before wakeful ever ran: what was said is history
        scene.owner_client.send_text(room, "old news msg-0")
        with DaemonProcess(scene.config, scene.port) as daemon:
            daemon.wait_for_log("matrix first sync")
            scene.owner_client.send_text(room, "first msg-1")
            scene.wait_replies(room, 1)
            assert daemon.stop() == 0
        scene.owner_client.send_text(room, "while you were away msg-2")
        with DaemonProcess(scene.config, scene.port) as daemon:
            scene.wait_replies(room, 2)
            scene.owner_client.send_text(room, "after msg-3")
            scene.wait_replies(room, 3)
            assert daemon.stop() == 0
        bodies = [r["content"]["body"] for r in scene.bot_replies(room)]
        assert bodies == ["**got** msg-1", "**got** msg-2", "**got** msg-3"]
        assert len(model_server.requests) == 3


def test_a_password_logs_in_as_one_device_and_no_secret_is_logged(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with matrix_scene(synapse, tmp_path, model_server.base_url, password=True) as scene:
        room = scene.room_with_bot()
        for number in (1, 2):  # a second start logs in again, as the same device
            with DaemonProcess(scene.config, scene.port) as daemon:
                daemon.wait_for_log("matrix logged in")
                scene.wait_joined(room)
                scene.owner_client.send_text(room, f"hi msg-{number}")
                scene.wait_replies(room, number)
                assert daemon.stop() == 0
            log = "\n".join(daemon.lines)
            assert scene.bot.password not in log and "syt_" not in log  # Synapse's tokens
        with MatrixTestClient(synapse.url, scene.bot) as bot:
            devices = bot.http.get("/devices").json()["devices"]
        assert [d["device_id"] for d in devices].count("WAKEFUL_HOME") == 1
        assert [r["content"]["body"] for r in scene.bot_replies(room)] == [
            "**got** msg-1",
            "**got** msg-2",
        ]


def test_the_room_shows_typing_while_the_reply_is_being_written(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    model_server.push(Reply(text="slowly " * 30, token_delay_s=0.1))  # about 3 s
    with (
        matrix_scene(synapse, tmp_path, model_server.base_url) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        room = scene.room_with_bot()
        scene.wait_joined(room)
        since = scene.owner_client.sync_token()
        scene.owner_client.send_text(room, "take your time")
        typing = scene.owner_client.wait_typing(room, scene.bot.user_id, since)
        assert typing, "the bot never showed as typing"
        scene.wait_replies(room, 1)
        assert daemon.stop() == 0


def test_a_user_id_no_session_name_may_hold_still_gets_a_session_of_its_own(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    """A per-user session is named after the sender; Matrix allows ids ("=", "/") that
    no session name may hold. Such a sender is answered in a session of their own."""
    answer_tags(model_server)
    odd = synapse.register(f"odd={uuid.uuid4().hex[:6]}")
    with (
        matrix_scene(
            synapse, tmp_path, model_server.base_url, also_allowed=(odd,), session="per-user"
        ) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        room = scene.room_with_bot(odd)
        scene.wait_joined(room)
        with MatrixTestClient(synapse.url, odd) as client:
            client.send_text(room, "from an odd id msg-1")
        assert scene.wait_replies(room, 1)[0]["content"]["body"] == "**got** msg-1"
        scene.owner_client.send_text(room, "and from me msg-2")
        assert scene.wait_replies(room, 2)[1]["content"]["body"] == "**got** msg-2"
        assert daemon.stop() == 0
    assert not any("cannot be an event" in line for line in daemon.lines)
