"""A person talks to wakeful over XMPP, on a real Prosody, through a real `wakeful run`."""

from __future__ import annotations

import re
from pathlib import Path

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer, Reply
from tests.matrix_daemon import answer_tags
from tests.prosody_server import ProsodyServer, prosody  # noqa: F401 (fixture)
from tests.test_matrix_conversation import said_to_model
from tests.xmpp_daemon import PASSWORDS, xmpp_scene
from tests.xmpp_user import no_more_than


def test_the_owners_message_reaches_the_model_once_and_the_reply_lands_once(
    prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path  # noqa: F811
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
