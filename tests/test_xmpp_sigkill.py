"""SIGKILL a real `wakeful run` in the middle of an XMPP conversation, again and again
(tests/support/sigkill_rounds.py).

Each round the owner writes one message and the daemon is killed at one of
these moments: while the model streams the answer; right after the answer
reached the owner; while the server is down and the answer waits for a retry;
right after the message was written (before or after the daemon read it); and
the message written while the daemon is down (the issue's "a restart must lose
no message sent meanwhile"). After every restart the conversation goes on. In
the end every message has been answered exactly once: none twice, none lost.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.prosody_server import ProsodyServer
from tests.support.sigkill_rounds import (
    ChatPlatform,
    SigkillRounds,
    after_the_answer,
    at_once,
    mid_stream,
    sigkill_rounds,
    while_sends_fail,
)
from tests.xmpp_daemon import PASSWORDS, XmppScene, xmpp_scene


class Xmpp(ChatPlatform):
    secrets = (PASSWORDS["bot"],)
    answer_timeout_s = 40.0

    def __init__(self, scene: XmppScene) -> None:
        self.scene = scene
        self.owner = scene.owner_client

    def say(self, text: str) -> None:
        self.owner.say(self.scene.bot, text)

    def posted(self) -> list[str]:
        return self.owner.messages_from(self.scene.bot)

    def wait_for(self, condition: Callable[[], object], timeout_s: float, what: str) -> None:
        self.owner.wait_for(condition, what, timeout_s)

    def ready(self, daemon: DaemonProcess) -> None:
        daemon.wait_for_log("xmpp caught up")

    def server_back(self) -> None:
        self.scene.server.start()
        self.owner.reconnect()


@pytest.fixture
def rounds(
    prosody: ProsodyServer, tmp_path: Path, model_server: FakeModelServer
) -> Iterator[SigkillRounds[Xmpp]]:
    with (
        xmpp_scene(prosody, tmp_path, model_server.base_url) as scene,
        sigkill_rounds(Xmpp(scene), model_server, scene.config, scene.port) as r,
    ):
        yield r


def test_killed_repeatedly_every_message_is_answered_exactly_once(
    rounds: SigkillRounds[Xmpp],
) -> None:
    """Four kills, one at each kill point: each message answered once."""
    xmpp = rounds.platform
    # The answer, when it comes, cannot be sent; the owner is cut off too.
    while_the_server_is_down = while_sends_fail(
        xmpp.scene.server.stop, xmpp.server_back, heard_first=True
    )
    rounds.run([mid_stream, after_the_answer, while_the_server_is_down, at_once])


def test_messages_written_while_the_daemon_is_down_are_answered_after_it_starts(
    rounds: SigkillRounds[Xmpp],
) -> None:
    """The daemon is killed; the owner writes twice; the new daemon reads both, once each,
    and answers them (in one reply: both wait for the same run)."""
    r, xmpp = rounds, rounds.platform
    r.say("before")
    r.wait_until_answered("before")
    r.kill()
    xmpp.say("while down 1")
    xmpp.say("while down 2")
    r.start()
    xmpp.owner.wait_for(
        lambda: [m for m in xmpp.posted() if "while down 2" in m],
        "the answer to what was said while the daemon was down",
    )
    said_by_owner = [str(m["content"]) for m in r.daemon.trajectory() if m["role"] == "user"]
    for text in ("while down 1", "while down 2"):
        assert sum(text in content for content in said_by_owner) == 1, said_by_owner
    r.run([])
    assert len(xmpp.posted()) == 3  # before, the two, last


def test_a_cursor_the_archive_no_longer_knows_reads_the_archive_again_without_doubles(
    rounds: SigkillRounds[Xmpp], tmp_path: Path
) -> None:
    """The archive expired the cursor's message while the daemon was down (stood in for
    by a cursor id the server never made): everything still archived is read again;
    what was answered already is dropped by its id, what is new is answered once."""
    r = rounds
    r.say("before")
    r.wait_until_answered("before")
    assert r.daemon.stop() == 0
    with sqlite3.connect(tmp_path / "wakeful.db") as db:
        changed = db.execute(
            "UPDATE channel_state SET value = 'expired-long-ago' WHERE key = ?",
            ("xmpp:home:archive_cursor",),
        ).rowcount
    assert changed == 1
    r.say("after")
    r.start()
    r.wait_until_answered("after")
    r.daemon.wait_for_log("xmpp archive cursor expired")
    r.run([])
