"""SIGKILL a real `wakeful run` in the middle of a Discord conversation, again and again.

Each round the owner writes one DM and the daemon is killed at one of these moments:
while the model streams the answer; right after the answer reached Discord; while
Discord's REST API is down and the answer waits for a retry; right after the message
was written (before or after the daemon saw it). The Gateway has no cursor across
restarts: what was said while the daemon was dead is fetched after the last message id
handled, and the store drops what it has already. In the end every message has been
answered exactly once in the DM: none twice, none lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.discord_api import FakeDiscord, SentMessage, bot_config, dm_channel_of
from tests.fakes.model_server import FakeModelServer, Reply
from tests.test_telegram_channel import said
from tests.test_telegram_sigkill import Conversation as TelegramConversation
from tests.test_telegram_sigkill import (
    kill_after_the_answer_arrived,
    kill_at_once,
    kill_mid_stream,
    toml_table,
)

OWNER = "80351110224678912"
FILLER = " and more" * 20  # streamed slowly, so a kill can land mid-stream


def slow_echo(body: dict[str, Any]) -> Reply:
    return Reply(text=f"answer to {said(body)}{FILLER}", token_delay_s=0.02)


class Conversation(TelegramConversation):
    """The owner, Discord, the model and a daemon that keeps being killed (the waits,
    the outbox check and the restart are the Telegram conversation's)."""

    def __init__(self, tmp_path: Path, discord: FakeDiscord, model: FakeModelServer) -> None:
        self.discord, self.model = discord, model
        self.port = free_port()
        self.config = write_config(tmp_path / "data", model.base_url, self.port)
        entry = bot_config(discord, tmp_path, allowed_user_ids=[OWNER])
        with self.config.open("a") as config:
            config.write(toml_table("chat.discord", entry))
        self.daemon = DaemonProcess(self.config, self.port).start()
        # What is said before the bot's first session is not for it (docs/discord.md).
        discord.wait_for(discord.connected, 20.0, "the bot's first Gateway session")
        self.said: list[str] = []
        self.earlier_logs: list[str] = []  # of the daemons killed so far

    def say(self, text: str) -> None:
        self.said.append(text)
        self.discord.user_says(OWNER, text)

    def answers_to(self, text: str) -> list[SentMessage]:  # type: ignore[override]
        return [
            m
            for m in self.discord.sent_to(dm_channel_of(OWNER))
            if m.content.startswith(f"answer to {text} ")
        ]

    def wait_until_answered(self, text: str, timeout_s: float = 30.0) -> None:
        self.discord.wait_for(lambda: bool(self.answers_to(text)), timeout_s, f"answer to {text}")


def kill_while_discord_is_down(c: Conversation, text: str) -> None:
    c.discord.fail("down", paths=r"^POST .*/messages$")
    c.wait_for_failed_attempt(text)
    c.restart(while_dead=c.discord.recover)  # the new daemon's first try succeeds


KILL_POINTS: list[Callable[[Conversation, str], None]] = [
    kill_mid_stream,
    kill_after_the_answer_arrived,
    kill_while_discord_is_down,
    kill_at_once,
]


@pytest.fixture
def conversation(tmp_path: Path) -> Iterator[Conversation]:
    with FakeDiscord() as discord, FakeModelServer() as model:
        model.responder = slow_echo
        c = Conversation(tmp_path, discord, model)
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
    assert not [line for line in logs if c.discord.token in line], "the bot token was logged"


def test_killed_at_every_point_every_message_is_answered_exactly_once(
    conversation: Conversation,
) -> None:
    """Four kills (mid-stream, after the answer, while Discord is down, at once): each
    message answered once."""
    run_rounds(conversation, kills=4)


@pytest.mark.slow
def test_killed_twelve_times_every_message_is_answered_exactly_once(
    conversation: Conversation,
) -> None:
    run_rounds(conversation, kills=12)
