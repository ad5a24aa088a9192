"""SIGKILL a real `wakeful run` in the middle of an IRC conversation, again and again.

The owner stays on a real ngircd throughout and writes privately to the bot; the
daemon is killed while the model streams the answer, right after the answer
reached IRC, while the IRC server is down and the answer waits for a retry, and
right after a message was written. After every restart the bot rejoins and the
conversation goes on. Every message the daemon read is answered exactly once;
one written in the instant of a kill may be lost, as IRC keeps nothing for a
client that is gone (docs/irc.md) — but it is never answered twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply
from tests.irc_daemon import BOT, CHANNEL, OWNER, irc_config, said, sees_in_channel
from tests.irc_user import IrcUser, Said
from tests.ngircd_server import Ngircd
from tests.support.chat_config import toml_table

FILLER = " and more" * 20  # streamed slowly, so a kill can land mid-stream


def slow_echo(body: dict[str, Any]) -> Reply:
    return Reply(text=f"answer to {said(body)}{FILLER}", token_delay_s=0.02)


class Conversation:
    """The owner on IRC, the model, and a daemon that keeps being killed."""

    def __init__(self, tmp_path: Path, ircd: Ngircd, model: FakeModelServer) -> None:
        self.ircd, self.model = ircd, model
        self.port = free_port()
        self.config = write_config(tmp_path / "data", model.base_url, self.port)
        with self.config.open("a") as config:
            config.write(toml_table("chat.irc", irc_config(ircd)))
        self.owner = self._owner()
        self.daemon = DaemonProcess(self.config, self.port).start()
        self.bot_back(joins=1)
        self.said: list[str] = []
        self.lost_at_kill: set[str] = set()  # written in the instant of a kill
        self.earlier_logs: list[str] = []
        self.earlier_said: list[Said] = []  # what the owner's earlier connections received

    def _owner(self) -> IrcUser:
        owner = IrcUser(self.ircd.port, OWNER)
        owner.join(CHANNEL)
        return owner

    def bot_back(self, joins: int) -> None:
        """Until the owner has seen the bot join the channel ``joins`` times in all."""

        def joined(line: str) -> bool:
            return line.startswith(f":{BOT}!") and sees_in_channel(line, OWNER, BOT)

        self.owner.wait_line(lambda _: sum(map(joined, self.owner.lines)) >= joins, 30, "the bot")
        self.joins = joins

    def say(self, text: str) -> None:
        self.said.append(text)
        self.owner.say(BOT, text)

    def answers_to(self, text: str) -> list[Said]:
        received = self.earlier_said + self.owner.from_(BOT)
        return [m for m in received if m.text.startswith(f"answer to {text} ")]

    def wait_until_answered(self, text: str, timeout_s: float = 30.0) -> None:
        self.owner.wait_said(lambda _: bool(self.answers_to(text)), timeout_s, f"answer {text}")

    def model_heard(self, text: str) -> None:
        deadline = time.monotonic() + 20
        while not any(said(r.body) == text for r in self.model.requests):
            self.model.wait_for_requests(len(self.model.requests) + 1, deadline - time.monotonic())

    def wait_for_failed_attempt(self, text: str, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.daemon.client() as client:
                listed = client.get("/api/sessions/main/outbox").json()["messages"]
            for message in listed:
                waiting = message["state"] == "pending" and message["attempts"] >= 1
                if waiting and message["text"].startswith(f"answer to {text} "):
                    return
            time.sleep(0.05)  # the outbox has no long poll
        raise TimeoutError(f"the answer to {text!r} never waited for a retry")

    def restart(self, *, while_dead: Callable[[], None] = lambda: None) -> None:
        self.daemon.kill()
        self.earlier_logs += self.daemon.lines
        while_dead()
        self.daemon = DaemonProcess(self.config, self.port).start()
        self.bot_back(self.joins + 1)


def kill_mid_stream(c: Conversation, text: str) -> None:
    c.model_heard(text)
    c.restart()


def kill_after_the_answer_arrived(c: Conversation, text: str) -> None:
    c.wait_until_answered(text)
    c.restart()


def kill_while_the_server_is_down(c: Conversation, text: str) -> None:
    c.model_heard(text)
    c.ircd.stop()  # the owner is cut off too
    c.wait_for_failed_attempt(text)

    def server_back() -> None:
        c.ircd.start()
        c.owner.close()
        c.earlier_said += c.owner.from_(BOT)
        c.owner = c._owner()
        c.joins = 0  # a new owner connection has seen no join yet

    c.restart(while_dead=server_back)


def kill_at_once(c: Conversation, text: str) -> None:
    c.lost_at_kill.add(text)  # read or not: IRC keeps nothing for a killed client
    c.restart()


KILL_POINTS: list[Callable[[Conversation, str], None]] = [
    kill_mid_stream,
    kill_after_the_answer_arrived,
    kill_while_the_server_is_down,
    kill_at_once,
]


@pytest.fixture
def conversation(tmp_path: Path) -> Iterator[Conversation]:
    with Ngircd(tmp_path / "ngircd") as ircd, FakeModelServer() as model:
        model.responder = slow_echo
        c = Conversation(tmp_path, ircd, model)
        try:
            yield c
        finally:
            c.daemon.stop()
            c.owner.close()
        assert model.violations == []


def run_rounds(c: Conversation, kills: int) -> None:
    for round_ in range(kills):
        text = f"m{round_}"
        c.say(text)
        KILL_POINTS[round_ % len(KILL_POINTS)](c, text)
        if text not in c.lost_at_kill:
            c.wait_until_answered(text)
    c.say("last")
    c.wait_until_answered("last")
    answered = {text: len(c.answers_to(text)) for text in c.said}
    wrong = {
        text: n for text, n in answered.items() if n > 1 or (n == 0 and text not in c.lost_at_kill)
    }
    assert wrong == {}, f"messages not answered exactly once: {wrong}"
    logs = c.earlier_logs + c.daemon.lines
    assert sum("irc connected" in line for line in logs) == kills + 1


def test_killed_repeatedly_every_message_read_is_answered_exactly_once(
    conversation: Conversation,
) -> None:
    """Four kills, one at each kill point: none answered twice, none read and lost."""
    run_rounds(conversation, kills=4)


@pytest.mark.slow
def test_killed_twelve_times_every_message_read_is_answered_exactly_once(
    conversation: Conversation,
) -> None:
    run_rounds(conversation, kills=12)
