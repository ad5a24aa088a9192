"""A person talks to wakeful over XMPP, on a real Prosody, through a real `wakeful run`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer, Reply
from tests.matrix_daemon import answer_tags
from tests.prosody_server import ProsodyServer
from tests.test_matrix_conversation import said_to_model
from tests.xmpp_daemon import PASSWORDS, xmpp_scene
from tests.xmpp_user import no_more_than
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.xmpp.outgoing import MAX_CHARS


def test_the_owners_message_reaches_the_model_once_and_the_reply_lands_once(
    prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with xmpp_scene(prosody, tmp_path, model_server.base_url) as scene:
        with DaemonProcess(scene.config, scene.port) as daemon:
            daemon.wait_for_log("xmpp caught up")
            scene.owner_client.say(scene.bot, "hello there, msg-1")
            assert scene.owner_client.wait_messages(scene.bot, 1) == ["**got** msg-1"]
            assert daemon.stop() == 0
        assert len(model_server.requests) == 1
        assert "hello there, msg-1" in said_to_model(model_server, 0)
        no_more_than(scene.owner_client, scene.bot, 1, settle_s=0.2)
        assert PASSWORDS["bot"] not in "\n".join(daemon.lines)


def test_a_stranger_is_asked_to_pair_and_reaches_the_model_only_once_approved(
    prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    with xmpp_scene(prosody, tmp_path, model_server.base_url) as scene:
        with DaemonProcess(scene.config, scene.port) as daemon, scene.stranger_client() as other:
            daemon.wait_for_log("xmpp caught up")
            other.say(scene.bot, "let me in")
            [asked] = other.wait_messages(scene.bot, 1)
            assert "pairing code" in asked
            code = re.search(r"^([A-Z0-9]{4}-[A-Z0-9]{4})$", asked, re.M)
            assert code is not None, asked
            with daemon.client() as api:
                pending = api.get("/api/pairing").json()["pending"]
            assert [(p["platform"], p["user_id"]) for p in pending] == [("xmpp", scene.stranger)]
            other.say(scene.bot, "still me")  # asked once: no second code
            assert model_server.requests == []
            answer_tags(model_server)
            approve = ["pairing", "approve", "xmpp", code.group(1)]  # as docs/xmpp.md says
            done = subprocess.run(
                [sys.executable, "-m", "wakeful", "-c", str(scene.config), *approve],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
            assert "paired" in other.wait_messages(scene.bot, 2)[1]
            other.say(scene.bot, "thanks msg-7")
            assert other.wait_messages(scene.bot, 3)[2] == "**got** msg-7"
            assert daemon.stop() == 0
        assert len(model_server.requests) == 1
        assert "let me in" not in said_to_model(model_server, 0)
        assert scene.owner_client.messages_from(scene.bot) == []


def test_stop_from_xmpp_closes_the_model_stream(
    prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    """ "stop" while a long reply streams aborts it, as it does from POST /api/messages."""
    model_server.push(Reply(text="a very long story " * 50, hang=True))
    with (
        xmpp_scene(prosody, tmp_path, model_server.base_url) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        daemon.wait_for_log("xmpp caught up")
        scene.owner_client.say(scene.bot, "tell me a long story")
        model_server.wait_for_requests(1, timeout_s=20)
        scene.owner_client.say(scene.bot, "stop")
        assert model_server.wait_for_abort(0, timeout_s=20).aborted
        assert daemon.stop() == 0


def test_composing_shows_while_the_reply_is_being_written(
    prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    """'composing' (XEP-0085) reaches the owner while the model works, before the reply."""
    model_server.push(Reply(text="slowly " * 30, token_delay_s=0.1))  # about 3 s
    # typing_every_s shorter than its default (20 s): renewed within the test's few seconds.
    with (
        xmpp_scene(prosody, tmp_path, model_server.base_url, typing_every_s=0.5) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        daemon.wait_for_log("xmpp caught up")
        scene.owner_client.say(scene.bot, "take your time")
        scene.owner_client.wait_messages(scene.bot, 1)
        assert daemon.stop() == 0
    states = [r.chat_state for r in scene.owner_client.received if r.sender == scene.bot]
    assert states[0] == "composing", states
    assert states[-1] == "active"  # the reply itself ends it


def test_a_long_reply_arrives_split_in_order_each_piece_within_the_limit(
    prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    long = "\n\n".join(f"part {i}: " + "wörd & <more> " * 900 for i in range(3))
    model_server.push(Reply(text=long))
    with (
        xmpp_scene(prosody, tmp_path, model_server.base_url) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        daemon.wait_for_log("xmpp caught up")
        scene.owner_client.say(scene.bot, "write a lot")
        expected = split_message(long, MAX_CHARS)
        assert len(expected) > 1
        pieces = scene.owner_client.wait_messages(scene.bot, len(expected))
        assert daemon.stop() == 0
    assert pieces == expected
    assert all(len(piece) <= MAX_CHARS for piece in pieces)
