"""SIGKILL a real `wakeful run` in the middle of an XMPP conversation, again and again.

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
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.prosody_server import ProsodyServer
from tests.test_telegram_channel import said
from tests.test_telegram_sigkill import slow_echo
from tests.xmpp_daemon import PASSWORDS, XmppScene, xmpp_scene


class Conversation:
    """The owner, Prosody, the model and a daemon that keeps being killed."""

    def __init__(self, scene: XmppScene, model: FakeModelServer) -> None:
        self.scene, self.model = scene, model
        self.owner = scene.owner_client
        self.said: list[str] = []
        self.earlier_logs: list[str] = []  # of the daemons killed so far
        self.daemon = self._start()

    def _start(self) -> DaemonProcess:
        daemon = DaemonProcess(self.scene.config, self.scene.port).start()
        daemon.wait_for_log("xmpp caught up")
        return daemon

    def say(self, text: str) -> None:
        self.said.append(text)
        self.owner.say(self.scene.bot, text)

    def answers_to(self, text: str) -> list[str]:
        return [
            m
            for m in self.owner.messages_from(self.scene.bot)
            if m.startswith(f"answer to {text} ")
        ]

    def wait_until_answered(self, text: str, timeout_s: float = 40.0) -> None:
        self.owner.wait_for(lambda: self.answers_to(text), f"answer to {text}", timeout_s)

    def model_heard(self, text: str) -> None:
        """Until a model request carrying ``text`` as its last user message has arrived."""
        deadline = time.monotonic() + 20
        while not any(said(r.body) == text for r in self.model.requests):
            self.model.wait_for_requests(len(self.model.requests) + 1, deadline - time.monotonic())

    def wait_for_failed_attempt(self, text: str, timeout_s: float = 20.0) -> None:
        """Until the answer to ``text`` waits for a retry: failed once, not being sent now."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.daemon.client() as client:
                messages = client.get("/api/sessions/main/outbox").json()["messages"]
            for message in messages:
                waiting = message["state"] == "pending" and message["attempts"] >= 1
                if waiting and message["text"].startswith(f"answer to {text} "):
                    return
            time.sleep(0.05)  # the outbox has no long poll; the next attempt is seconds away
        raise TimeoutError(f"the answer to {text!r} never waited for a retry")

    def restart(self, *, while_dead: Callable[[], None] = lambda: None) -> None:
        self.daemon.kill()
        self.earlier_logs += self.daemon.lines
        while_dead()
        self.daemon = self._start()


def kill_mid_stream(c: Conversation, text: str) -> None:
    c.model_heard(text)
    c.restart()


def kill_after_the_answer_arrived(c: Conversation, text: str) -> None:
    c.wait_until_answered(text)
    c.restart()


def kill_while_the_server_is_down(c: Conversation, text: str) -> None:
    c.model_heard(text)
    c.scene.server.stop()  # the answer, when it comes, cannot be sent
    c.wait_for_failed_attempt(text)

    def server_back() -> None:
        c.scene.server.start()
        c.owner.reconnect()

    c.restart(while_dead=server_back)


def kill_at_once(c: Conversation, text: str) -> None:
    c.restart()  # the message may or may not have been read and committed


KILL_POINTS: list[Callable[[Conversation, str], None]] = [
    kill_mid_stream,
    kill_after_the_answer_arrived,
    kill_while_the_server_is_down,
    kill_at_once,
]


@pytest.fixture
def conversation(prosody: ProsodyServer, tmp_path: Path) -> Iterator[Conversation]:
    with FakeModelServer() as model:
        model.responder = slow_echo
        with xmpp_scene(prosody, tmp_path, model.base_url) as scene:
            c = Conversation(scene, model)
            try:
                yield c
            finally:
                c.daemon.stop()
        assert model.violations == []


def run_rounds(c: Conversation, kills: int) -> None:
    for round_ in range(kills):
        text = f"m{round_}"
        c.say(text)
        KILL_POINTS[round_ % len(KILL_POINTS)](c, text)
        c.wait_until_answered(text)
    c.say("last")  # after the last kill: everything before it is settled once this is answered
    c.wait_until_answered("last")
    doubled = {text: len(c.answers_to(text)) for text in c.said if len(c.answers_to(text)) != 1}
    assert doubled == {}, f"messages not answered exactly once: {doubled}"
    logs = c.earlier_logs + c.daemon.lines
    assert not [line for line in logs if PASSWORDS["bot"] in line], "the password was logged"


def test_killed_repeatedly_every_message_is_answered_exactly_once(
    conversation: Conversation,
) -> None:
    """Four kills, one at each kill point: each message answered once."""
    run_rounds(conversation, kills=4)


def test_messages_written_while_the_daemon_is_down_are_answered_after_it_starts(
    conversation: Conversation,
) -> None:
    """The daemon is killed; the owner writes twice; the new daemon reads both, once each,
    and answers them (in one reply: both wait for the same run)."""
    c = conversation
    c.say("before")
    c.wait_until_answered("before")
    c.daemon.kill()
    c.earlier_logs += c.daemon.lines
    c.owner.say(c.scene.bot, "while down 1")
    c.owner.say(c.scene.bot, "while down 2")
    c.daemon = c._start()
    c.owner.wait_for(
        lambda: [m for m in c.owner.messages_from(c.scene.bot) if "while down 2" in m],
        "the answer to what was said while the daemon was down",
    )
    said_by_owner = [str(m["content"]) for m in c.daemon.trajectory() if m["role"] == "user"]
    for text in ("while down 1", "while down 2"):
        assert sum(text in content for content in said_by_owner) == 1, said_by_owner
    run_rounds(c, kills=0)
    assert len(c.owner.messages_from(c.scene.bot)) == 3  # before, the two, last


def test_a_cursor_the_archive_no_longer_knows_reads_the_archive_again_without_doubles(
    prosody: ProsodyServer, tmp_path: Path
) -> None:
    """The archive expired the cursor's message while the daemon was down (stood in for
    by a cursor id the server never made): everything still archived is read again;
    what was answered already is dropped by its id, what is new is answered once."""
    with FakeModelServer() as model:
        model.responder = slow_echo
        with xmpp_scene(prosody, tmp_path, model.base_url) as scene:
            c = Conversation(scene, model)
            try:
                c.say("before")
                c.wait_until_answered("before")
                assert c.daemon.stop() == 0
                with sqlite3.connect(tmp_path / "wakeful.db") as db:
                    changed = db.execute(
                        "UPDATE channel_state SET value = 'expired-long-ago' WHERE key = ?",
                        ("xmpp:home:archive_cursor",),
                    ).rowcount
                assert changed == 1
                c.say("after")
                c.daemon = c._start()
                c.wait_until_answered("after")
                c.daemon.wait_for_log("xmpp archive cursor expired")
                run_rounds(c, kills=0)
            finally:
                c.daemon.stop()
        assert model.violations == []
