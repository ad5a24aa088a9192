"""The XMPP server goes away and comes back: the account's health says so, the daemon
stays up, the account reconnects with back-off, and nothing said or answered is lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.matrix_daemon import answer_tags, wait_until
from tests.prosody_server import ProsodyServer
from tests.xmpp_daemon import xmpp_scene


def health(daemon: DaemonProcess) -> dict[str, Any]:
    with daemon.client() as api:
        found: dict[str, Any] = api.get("/api/status").json()["components"]["chat.xmpp:home"]
    return found


def test_the_server_down_shows_in_the_health_and_the_account_comes_back_by_itself(
    prosody: ProsodyServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    # retry_max_s shorter than its default (60 s): the test waits for the reconnection.
    with (
        xmpp_scene(prosody, tmp_path, model_server.base_url, retry_max_s=2.0) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        daemon.wait_for_log("xmpp caught up")
        assert health(daemon)["ok"]
        scene.owner_client.say(scene.bot, "first msg-1")
        assert scene.owner_client.wait_messages(scene.bot, 1) == ["**got** msg-1"]

        prosody.stop()
        down = wait_until(lambda: (h := health(daemon)) and not h["ok"] and h, "health not ok")
        assert "connection failing" in down["detail"], down
        # Several reconnections fail (back-off up to 2 s): the daemon stays up meanwhile.
        wait_until(lambda: "(3x)" in health(daemon)["detail"], "three failed reconnections")
        assert daemon.proc is not None and daemon.proc.poll() is None
        with daemon.client() as api:
            assert api.get("/healthz").status_code == 200

        prosody.start()
        daemon.wait_for_log("xmpp caught up", count=2, timeout_s=20)
        assert health(daemon)["ok"]
        scene.owner_client.reconnect()
        scene.owner_client.say(scene.bot, "again msg-2")
        assert scene.owner_client.wait_messages(scene.bot, 2)[1] == "**got** msg-2"
        assert daemon.stop() == 0
    assert len(model_server.requests) == 2
