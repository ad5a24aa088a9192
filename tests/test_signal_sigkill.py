"""SIGKILL a real `wakeful run` in the middle of a Signal conversation, again and again.

Each round the owner writes one message and the daemon is killed at one of these
moments: while the model streams the answer; right after the answer reached
signal-cli; while signal-cli refuses to send (an I/O error) and the answer waits
for a retry; right after the message was written (before or after the daemon saw
it). signal-cli stays up the whole time and keeps the events for the next stream
(Last-Event-ID). After every restart the conversation goes on. In the end every
message has been answered exactly once: none twice, none lost.

Signal's ``send`` has no idempotency key (``resend_safe`` False), so a kill in the
instant between signal-cli accepting a send and the outbox recording it would
leave that reply ``unknown`` rather than send it twice; none of these kill points
lands there, and a reply in that state would show here as missing, not doubled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply
from tests.fakes.signal_cli import FakeSignalCli, Sent
from tests.test_signal_channel import OWNER, account_config
from tests.test_telegram_channel import said
from tests.support.chat_config import toml_table

FILLER = " and more" * 20  # streamed slowly, so a kill can land mid-stream


def slow_echo(body: dict[str, Any]) -> Reply:
    return Reply(text=f"answer to {said(body)}{FILLER}", token_delay_s=0.02)


class Conversation:
    """The owner, signal-cli, the model and a daemon that keeps being killed."""

    def __init__(self, tmp_path: Path, signal: FakeSignalCli, model: FakeModelServer) -> None:
        self.signal, self.model = signal, model
        self.port = free_port()
        self.config = write_config(tmp_path / "data", model.base_url, self.port)
        with self.config.open("a") as config:
            config.write(toml_table("chat.signal", account_config(signal)))
        self.daemon = self._start()
        self.said: list[str] = []
        self.earlier_logs: list[str] = []  # of the daemons killed so far

    def _start(self) -> DaemonProcess:
        opened = len(self.signal.stream_opens)
        daemon = DaemonProcess(self.config, self.port).start()
        # Its stream is open: what is said from now on reaches it or waits for the next one.
        self.signal.wait_for(lambda: len(self.signal.stream_opens) > opened, 20, "a stream")
        return daemon

    def say(self, text: str) -> None:
        self.said.append(text)
        self.signal.user_says(OWNER, text)

    def answers_to(self, text: str) -> list[Sent]:
        return [
            s for s in self.signal.sent_to(OWNER.number) if s.text.startswith(f"answer to {text} ")
        ]

    def wait_until_answered(self, text: str, timeout_s: float = 30.0) -> None:
        self.signal.wait_for(lambda: bool(self.answers_to(text)), timeout_s, f"answer to {text}")

    def model_heard(self, text: str) -> None:
        deadline = time.monotonic() + 20
        while not any(said(r.body) == text for r in self.model.requests):
            self.model.wait_for_requests(len(self.model.requests) + 1, deadline - time.monotonic())

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


def kill_while_sends_fail(c: Conversation, text: str) -> None:
    c.signal.fail("io")
    c.signal.wait_for(lambda: any(call.error == -3 for call in c.signal.calls), 20, "a failed send")
    c.restart(while_dead=c.signal.recover)  # the new daemon's first try succeeds


def kill_at_once(c: Conversation, text: str) -> None:
    c.restart()  # the event may or may not have been read and committed


KILL_POINTS: list[Callable[[Conversation, str], None]] = [
    kill_mid_stream,
    kill_after_the_answer_arrived,
    kill_while_sends_fail,
    kill_at_once,
]


@pytest.fixture
def conversation(tmp_path: Path) -> Iterator[Conversation]:
    with FakeSignalCli(keepalive_s=0.5) as signal, FakeModelServer() as model:
        model.responder = slow_echo
        c = Conversation(tmp_path, signal, model)
        try:
            yield c
        finally:
            c.daemon.stop()
        assert model.violations == []


def test_killed_repeatedly_every_message_is_answered_exactly_once(
    conversation: Conversation,
) -> None:
    """Four kills, one at each kill point: each message answered once."""
    c = conversation
    for round_, kill in enumerate(KILL_POINTS):
        text = f"m{round_}"
        c.say(text)
        kill(c, text)
        c.wait_until_answered(text)
    c.say("last")  # after the last kill: everything before it is settled once this is answered
    c.wait_until_answered("last")
    doubled = {text: len(c.answers_to(text)) for text in c.said if len(c.answers_to(text)) != 1}
    assert doubled == {}, f"messages not answered exactly once: {doubled}"
    logs = c.earlier_logs + c.daemon.lines
    assert any("signal account ready" in line for line in logs)
    # Every stream after the first named the last event handled.
    assert all(opened is not None for opened in c.signal.stream_opens[1:])
