"""End-to-end encrypted rooms, from a real Matrix client with real encryption (matrix-nio
with vodozemac): wakeful cannot read them, says so once per room in plain text, and
lists them in its status — on a real Synapse, through a real `wakeful run` with the
default Matrix settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.matrix_daemon import MatrixScene, answer_tags, matrix_scene, wait_until
from tests.matrix_nio import NioPerson
from tests.synapse_server import SynapseServer
from wakeful.channels.matrix.encrypted import NOTICE

STATUS_KEY = "encrypted rooms not readable"


def bot_messages(scene: MatrixScene, room: str) -> list[dict[str, Any]]:
    """Every message the bot put in the room (encrypted or not), as the homeserver holds it."""
    return [
        e
        for e in scene.owner_client.timeline(room)
        if e["sender"] == scene.bot.user_id and e["type"] in ("m.room.message", "m.room.encrypted")
    ]


def stored(scene: MatrixScene, room: str, event_id: str) -> dict[str, Any]:
    """The event as the homeserver holds it (what every other member's client gets)."""
    path = f"/rooms/{quote(room)}/event/{quote(event_id)}"
    event: dict[str, Any] = scene.owner_client.http.get(path).json()
    return event


def plain_and_answered(scene: MatrixScene, room: str, text: str, count: int) -> None:
    """An unencrypted message (a client may still send one) is answered: once its answer
    is there, everything sent before it has been taken by the daemon."""
    scene.owner_client.send_text(room, text)

    def answers() -> int:
        return sum(
            str(m["content"].get("body")).startswith("**got**") for m in bot_messages(scene, room)
        )

    wait_until(lambda: answers() >= count, f"the answer to {text!r}")


def test_an_encrypted_dm_is_told_once_in_plain_text_and_shows_in_status(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with matrix_scene(synapse, tmp_path, model_server.base_url, tuned=False) as scene:
        with NioPerson(synapse.url, scene.owner, tmp_path / "nio") as owner:
            with DaemonProcess(scene.config, scene.port) as daemon:
                dm = owner.open_dm(scene.bot.user_id, encrypted=True)
                scene.wait_joined(dm)
                sent = stored(scene, dm, owner.send_text(dm, "a secret msg-1"))
                assert sent["type"] == "m.room.encrypted", sent  # nio encrypted it for real
                assert "msg-1" not in str(sent["content"])
                [notice] = wait_until(lambda: bot_messages(scene, dm), "the notice")
                assert notice["type"] == "m.room.message"  # plain, not m.room.encrypted
                assert notice["content"]["body"] == NOTICE
                assert "end-to-end encrypted" in owner.texts_from(dm, scene.bot.user_id)[0]
                owner.send_text(dm, "another secret msg-2")
                plain_and_answered(scene, dm, "in the clear msg-3", 1)
                with daemon.client() as api:
                    status = api.get("/api/status").json()["chat:matrix:home"]
                assert status[STATUS_KEY] == f"1 ({dm})"
                shown = subprocess.run(
                    [sys.executable, "-m", "wakeful", "-c", str(scene.config), "status"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                ).stdout
                assert f"{STATUS_KEY} 1 ({dm})" in " ".join(shown.split()), shown
                assert daemon.stop() == 0
            # Once per room, also across a restart; the status still names the room.
            with DaemonProcess(scene.config, scene.port) as daemon:
                owner.send_text(dm, "after the restart msg-4")
                plain_and_answered(scene, dm, "clear again msg-5", 2)
                with daemon.client() as api:
                    status = api.get("/api/status").json()["chat:matrix:home"]
                assert status[STATUS_KEY] == f"1 ({dm})"
                assert daemon.stop() == 0
        bodies = [m["content"]["body"] for m in bot_messages(scene, dm)]
        assert bodies == [NOTICE, "**got** msg-3", "**got** msg-5"]
    said = " ".join(str(r.body["messages"]) for r in model_server.requests)
    assert "msg-1" not in said and "msg-2" not in said and "msg-4" not in said


def test_a_room_encrypted_after_the_bot_joined_is_told_at_its_first_encrypted_message(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    """No m.room.encryption in the invite: the first m.room.encrypted event is the sign."""
    with (
        matrix_scene(synapse, tmp_path, model_server.base_url, tuned=False) as scene,
        NioPerson(synapse.url, scene.owner, tmp_path / "nio") as owner,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        room = owner.open_dm(scene.bot.user_id)
        scene.wait_joined(room)
        with daemon.client() as api:
            status = api.get("/api/status").json()["chat:matrix:home"]
        assert status[STATUS_KEY] == "0"
        owner.encrypt(room)
        sent = stored(scene, room, owner.send_text(room, "secret msg-1"))
        assert sent["type"] == "m.room.encrypted", sent
        [notice] = wait_until(lambda: bot_messages(scene, room), "the notice")
        assert notice["content"]["body"] == NOTICE
        with daemon.client() as api:
            status = api.get("/api/status").json()["chat:matrix:home"]
        assert status[STATUS_KEY] == f"1 ({room})"
        assert daemon.stop() == 0
    assert model_server.requests == []
