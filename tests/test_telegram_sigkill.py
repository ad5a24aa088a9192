"""SIGKILL a real `wakeful run` in the middle of a Telegram conversation, again and again.

Each round the owner writes one message and the daemon is killed at one of
these moments: while the model streams the answer; right after the answer
reached Telegram; while Telegram is down and the answer waits for a retry;
right after the message was written (before or after the daemon saw it).
After every restart the conversation goes on. In the end every message has
been answered exactly once in the chat: none twice, none lost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi, SentMessage, bot_config
from tests.test_telegram_channel import said

OWNER = 4242
FILLER = " and more" * 20  # streamed slowly, so a kill can land mid-stream


def slow_echo(body: dict[str, Any]) -> Reply:
    return Reply(text=f"answer to {said(body)}{FILLER}", token_delay_s=0.02)


def toml_table(name: str, entry: dict[str, Any]) -> str:
    """One ``[[name]]`` table; JSON's strings, numbers and lists are valid TOML values."""
    lines = [f"[[{name}]]", *(f"{key} = {json.dumps(value)}" for key, value in entry.items())]
    return "\n".join(lines) + "\n"


class Conversation:
    """The owner, Telegram, the model and a daemon that keeps being killed."""

    def __init__(
        self, tmp_path: Path, telegram: FakeTelegramApi, model: FakeModelServer, mode: str
    ) -> None:
        self.telegram, self.model = telegram, model
        self.port = free_port()
        self.config = write_config(tmp_path / "data", model.base_url, self.port)
        webhook = {"mode": mode, "public_url": f"http://127.0.0.1:{self.port}"}
        entry = bot_config(
            telegram, tmp_path, allowed_user_ids=[OWNER], **(webhook if mode == "webhook" else {})
        )
        with self.config.open("a") as config:
            config.write(toml_table("chat.telegram", entry))
        self.daemon = DaemonProcess(self.config, self.port).start()
        self.said: list[str] = []
        self.earlier_logs: list[str] = []  # of the daemons killed so far

    def say(self, text: str) -> None:
        self.said.append(text)
        self.telegram.user_says(OWNER, text)

    def answers_to(self, text: str) -> list[SentMessage]:
        return [
            m for m in self.telegram.sent_to(OWNER) if m.visible.startswith(f"answer to {text} ")
        ]

    def wait_until_answered(self, text: str, timeout_s: float = 30.0) -> None:
        self.telegram.wait_for(lambda: bool(self.answers_to(text)), timeout_s, f"answer to {text}")

    def model_heard(self, text: str) -> None:
        """Until a model request carrying ``text`` as its last user message has arrived."""
        deadline = time.monotonic() + 20
        while not any(said(r.body) == text for r in self.model.requests):
            self.model.wait_for_requests(len(self.model.requests) + 1, deadline - time.monotonic())

    def outbox(self) -> list[dict[str, Any]]:
        with self.daemon.client() as client:
            messages: list[dict[str, Any]] = client.get("/api/sessions/main/outbox").json()[
                "messages"
            ]
        return messages

    def wait_for_failed_attempt(self, text: str, timeout_s: float = 20.0) -> None:
        """Until the answer to ``text`` waits for a retry: failed once, not being sent now."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for message in self.outbox():
                waiting = message["state"] == "pending" and message["attempts"] >= 1
                if waiting and message["text"].startswith(f"answer to {text} "):
                    return
            # The outbox has no long poll; the next attempt is seconds away, this is not.
            time.sleep(0.05)
        raise TimeoutError(f"the answer to {text!r} never waited for a retry")

    def restart(self, *, while_dead: Callable[[], None] = lambda: None) -> None:
        self.daemon.kill()
        self.earlier_logs += self.daemon.lines
        while_dead()
        self.daemon = DaemonProcess(self.config, self.port).start()


def kill_mid_stream(c: Conversation, text: str) -> None:
    c.model_heard(text)
    c.restart()


def kill_after_the_answer_arrived(c: Conversation, text: str) -> None:
    c.wait_until_answered(text)
    c.restart()


def kill_while_telegram_is_down(c: Conversation, text: str) -> None:
    c.telegram.fail("down", methods={"sendMessage"})
    c.wait_for_failed_attempt(text)
    c.restart(while_dead=c.telegram.recover)  # the new daemon's first try succeeds


def kill_at_once(c: Conversation, text: str) -> None:
    c.restart()  # the update may or may not have been read and committed


KILL_POINTS: list[Callable[[Conversation, str], None]] = [
    kill_mid_stream,
    kill_after_the_answer_arrived,
    kill_while_telegram_is_down,
    kill_at_once,
]


@pytest.fixture
def conversation(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Conversation]:
    """Polling mode unless the test is parametrized with ``mode``."""
    mode = getattr(request, "param", "polling")
    with FakeTelegramApi() as telegram, FakeModelServer() as model:
        model.responder = slow_echo
        c = Conversation(tmp_path, telegram, model, mode)
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
    assert any("telegram bot ready" in line for line in logs)
    assert not [line for line in logs if c.telegram.token in line], "the bot token was logged"


def test_killed_repeatedly_every_message_is_answered_exactly_once(
    conversation: Conversation,
) -> None:
    """Three kills (mid-stream, after the answer, while Telegram is down): each answered once."""
    run_rounds(conversation, kills=3)


@pytest.mark.slow
@pytest.mark.parametrize("conversation", ["polling", "webhook"], indirect=True)
def test_killed_twenty_times_every_message_is_answered_exactly_once(
    conversation: Conversation,
) -> None:
    """Twenty kills over every kill point, in both modes: none answered twice, none lost.
    (Webhook mode: Telegram re-posts what a killed daemon did not answer 200.)"""
    run_rounds(conversation, kills=20)
