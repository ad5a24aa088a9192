"""TLS is required by default: against a real Prosody that offers none, the account
never logs in (the password is not sent) and its health says why; allow_plaintext,
accepted for a loopback server only, logs in there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.matrix_daemon import answer_tags, wait_until
from tests.prosody_server import ProsodyServer
from tests.test_xmpp_outage import health
from tests.xmpp_daemon import PASSWORDS, xmpp_scene


@pytest.fixture
def plaintext_prosody(tmp_path: Path) -> Iterator[ProsodyServer]:
    server = ProsodyServer(tmp_path, tls=False)
    try:
        yield server.start()
    finally:
        server.close()


def test_the_defaults_refuse_a_server_without_tls(
    plaintext_prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    bot = "bot@localhost"
    with (
        xmpp_scene(plaintext_prosody, tmp_path, model_server.base_url) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        refused = wait_until(
            lambda: (h := health(daemon)) and "(2x)" in h["detail"] and h, "two refusals"
        )
        assert not refused["ok"]
        assert "allow_plaintext" in refused["detail"], refused
        scene.owner_client.say(bot, "anyone there?")
        assert daemon.stop() == 0
    assert f"Authenticated as {bot}" not in plaintext_prosody.log.read_text()
    assert model_server.requests == []


def test_allow_plaintext_logs_in_to_a_loopback_server_without_tls(
    plaintext_prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with (
        xmpp_scene(
            plaintext_prosody, tmp_path, model_server.base_url, allow_plaintext=True
        ) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        daemon.wait_for_log("xmpp caught up")
        scene.owner_client.say(scene.bot, "over plaintext msg-1")
        assert scene.owner_client.wait_messages(scene.bot, 1) == ["**got** msg-1"]
        assert daemon.stop() == 0
    assert PASSWORDS["bot"] not in "\n".join(daemon.lines)
