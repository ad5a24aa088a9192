"""A stranger opens a direct chat with wakeful from a real Matrix client (matrix-nio):
they are told their pairing code there, the owner sees it in `wakeful pairing list`,
approves it, and from then on the stranger is answered — and strangers' invites stay
bounded. A real Synapse, a real `wakeful run` with the default Matrix settings."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.matrix_daemon import answer_tags, matrix_scene, wait_until
from tests.matrix_nio import NioPerson
from tests.synapse_server import MatrixTestClient, SynapseServer
from wakeful.channels.matrix.encrypted import NOTICE
from wakeful.channels.matrix.strangers import MAX_STRANGER_ROOMS

CODE = re.compile(r"^([A-Z0-9]{4}-[A-Z0-9]{4})$", re.M)


def wakeful_cli(config: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "wakeful", "-c", str(config), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def wait_left(client: MatrixTestClient, room: str, bot: str) -> None:
    wait_until(lambda: client.members(room).get(bot) == "leave", f"the bot declining {room}")


def wait_told(client: MatrixTestClient, room: str, bot: str) -> None:
    wait_until(lambda: client.replies_from(room, bot), f"a pairing code in {room}")


def test_a_strangers_direct_chat_gets_its_code_there_and_approval_lets_them_in(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    stranger = synapse.register()
    with (
        matrix_scene(synapse, tmp_path, model_server.base_url, tuned=False) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
        NioPerson(synapse.url, stranger, tmp_path / "nio") as person,
    ):
        dm = person.open_dm(scene.bot.user_id)
        wait_until(lambda: person.texts_from(dm, scene.bot.user_id), "the pairing code in the DM")
        [told] = person.texts_from(dm, scene.bot.user_id)
        code = CODE.search(told)
        assert "pairing code" in told and code is not None, told
        listing = wakeful_cli(scene.config, "pairing", "list")
        assert f"matrix    {code.group(1)}  {stranger.user_id} on home" in listing, listing
        person.send_text(dm, "hello? msg-1")  # before approval: not for the model
        with daemon.client() as api:  # the daemon took the message (and sent no second code)
            wait_until(
                lambda: api.get("/api/status").json()["chat:matrix:home"]["messages"],
                "the message taken",
            )
        assert model_server.requests == []
        assert len(person.texts_from(dm, scene.bot.user_id)) == 1
        answer_tags(model_server)
        approved = wakeful_cli(scene.config, "pairing", "approve", "matrix", code.group(1))
        assert "is let in" in approved
        wait_until(lambda: len(person.texts_from(dm, scene.bot.user_id)) == 2, "told paired")
        assert "paired" in person.texts_from(dm, scene.bot.user_id)[1]
        person.send_text(dm, "now then msg-2")
        wait_until(lambda: len(person.texts_from(dm, scene.bot.user_id)) == 3, "an answer")
        assert person.texts_from(dm, scene.bot.user_id)[2] == "**got** msg-2"
        assert "no pairing requests are waiting" in wakeful_cli(scene.config, "pairing", "list")
        assert daemon.stop() == 0
    assert len(model_server.requests) == 1


def test_strangers_invites_are_bounded_one_room_each_and_a_few_at_once(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    """A Matrix account costs nothing to make: however many strangers invite the bot,
    it holds at most MAX_STRANGER_ROOMS rooms for them, one each, private direct chats
    only; a denied stranger's room is left and its place given to the next one."""
    strangers = [synapse.register() for _ in range(MAX_STRANGER_ROOMS + 1)]
    with matrix_scene(synapse, tmp_path, model_server.base_url, tuned=False) as scene:
        bot = scene.bot.user_id
        with DaemonProcess(scene.config, scene.port) as daemon:
            clients = [MatrixTestClient(synapse.url, user) for user in strangers]
            try:
                first = clients[0]
                group = first.create_room([bot], direct=False)  # not a direct chat
                public = first.create_room([bot], public=True)  # anyone may walk in
                for declined in (group, public):
                    wait_left(first, declined, bot)
                assert first.replies_from(group, bot) == first.replies_from(public, bot) == []
                rooms = []
                for client in clients[:MAX_STRANGER_ROOMS]:
                    rooms.append(client.create_room([bot]))
                    wait_told(client, rooms[-1], bot)
                again = first.create_room([bot])  # the same stranger, a second room
                wait_until(lambda: first.members(again).get(bot) == "leave", "declined")
                late = clients[-1]
                extra = late.create_room([bot])  # one stranger too many
                wait_until(lambda: late.members(extra).get(bot) == "leave", "declined")
                assert late.replies_from(extra, bot) == []
                with daemon.client() as api:
                    pending = api.get("/api/pairing").json()["pending"]
                    status = api.get("/api/status").json()["chat:matrix:home"]
                assert len(pending) == MAX_STRANGER_ROOMS
                waiting = f"{MAX_STRANGER_ROOMS} of at most {MAX_STRANGER_ROOMS}"
                assert status["strangers' rooms waiting for pairing"] == waiting
                denied = next(p for p in pending if p["user_id"] == first.user.user_id)
                wakeful_cli(scene.config, "pairing", "deny", "matrix", denied["code"])
                retried = late.create_room([bot])  # a place is free once a stranger is denied
                wait_until(lambda: late.replies_from(retried, bot), "the late stranger's code")
                assert first.members(rooms[0]).get(bot) == "leave"  # the denied one's room
                third = first.create_room([bot])  # a denied stranger stays out
                wait_until(lambda: first.members(third).get(bot) == "leave", "declined")
                # The decline is logged once the homeserver answered the leave, which the
                # stranger's client may see first: wait for the record, then stop.
                wait_until(
                    lambda: any(r.get("room") == third and "why" in r for r in daemon.records()),
                    "the decline logged",
                )
                assert daemon.stop() == 0
                why = {str(r["room"]): str(r["why"]) for r in daemon.records() if "why" in r}
                assert (
                    why[group]
                    == why[public]
                    == ("a stranger's invite is joined only to a private direct chat")
                )
                assert "already waits in" in why[again] and "strangers already" in why[extra]
                assert why[third] == "the owner denied this user"
            finally:
                for client in clients:
                    client.close()


def test_a_strangers_encrypted_direct_chat_gets_its_code_and_the_notice_in_plain_text(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    """Element encrypts a new direct chat by default: the stranger still gets a code
    they can read, and is told why what they write there would not be read."""
    stranger = synapse.register()
    with (
        matrix_scene(synapse, tmp_path, model_server.base_url, tuned=False) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
        NioPerson(synapse.url, stranger, tmp_path / "nio") as person,
        MatrixTestClient(synapse.url, stranger) as raw,
    ):
        dm = person.open_dm(scene.bot.user_id, encrypted=True)
        wait_until(lambda: len(person.texts_from(dm, scene.bot.user_id)) == 2, "two messages")
        code, notice = person.texts_from(dm, scene.bot.user_id)
        assert CODE.search(code) is not None and notice == NOTICE
        said = [e for e in raw.timeline(dm) if e["sender"] == scene.bot.user_id]
        assert [e["type"] for e in said if e["type"] != "m.room.member"] == [
            "m.room.message",  # plain, though the room is encrypted
            "m.room.message",
        ]
        with daemon.client() as api:
            [pending] = api.get("/api/pairing").json()["pending"]
            status = api.get("/api/status").json()["chat:matrix:home"]
        assert pending["user_id"] == stranger.user_id
        assert status["encrypted rooms not readable"] == f"1 ({dm})"
        assert daemon.stop() == 0
    assert model_server.requests == []
