"""SIGKILL a real `wakeful run` in the middle of a Discord conversation, again and again
(tests/support/sigkill_rounds.py): killed while the model streams the answer, right
after the answer reached Discord, while Discord's REST API is down and the answer waits
for a retry, and right after the DM was written (before or after the daemon saw it).
The Gateway has no cursor across restarts: what was said while the daemon was dead is
fetched after the last message id handled, and the store drops what it has already.
In the end every message has been answered exactly once in the DM: none twice, none
lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.discord_api import FakeDiscord, bot_config, dm_channel_of
from tests.fakes.model_server import FakeModelServer
from tests.support.chat_config import chat_config, toml_table
from tests.support.sigkill_rounds import (
    ChatPlatform,
    SigkillRounds,
    after_the_answer,
    at_once,
    cycle,
    mid_stream,
    sigkill_rounds,
    while_sends_fail,
)

OWNER = "80351110224678912"


class Discord(ChatPlatform):
    def __init__(self, discord: FakeDiscord) -> None:
        self.discord = discord
        self.secrets = (discord.token,)
        self.started = False

    def say(self, text: str) -> None:
        self.discord.user_says(OWNER, text)

    def posted(self) -> list[str]:
        return [m.content for m in self.discord.sent_to(dm_channel_of(OWNER))]

    def wait_for(self, condition: Callable[[], object], timeout_s: float, what: str) -> None:
        self.discord.wait_for(condition, timeout_s, what)

    def ready(self, daemon: DaemonProcess) -> None:
        # What is said before the bot's first session is not for it (docs/discord.md).
        if not self.started:
            self.discord.wait_for(self.discord.connected, 20.0, "the bot's first Gateway session")
            self.started = True


@pytest.fixture
def rounds(tmp_path: Path, model_server: FakeModelServer) -> Iterator[SigkillRounds[Discord]]:
    with FakeDiscord() as discord:
        entry = bot_config(discord, tmp_path, allowed_user_ids=[OWNER])
        config, port = chat_config(
            tmp_path, model_server.base_url, toml_table("chat.discord", entry)
        )
        with sigkill_rounds(Discord(discord), model_server, config, port) as r:
            yield r


def run(r: SigkillRounds[Discord], kills: int) -> None:
    discord = r.platform.discord
    while_discord_is_down = while_sends_fail(
        lambda: discord.fail("down", paths=r"^POST .*/messages$"), discord.recover
    )
    r.run(cycle([mid_stream, after_the_answer, while_discord_is_down, at_once], kills))


def test_killed_at_every_point_every_message_is_answered_exactly_once(
    rounds: SigkillRounds[Discord],
) -> None:
    """Four kills (mid-stream, after the answer, while Discord is down, at once): each
    message answered once."""
    run(rounds, kills=4)


@pytest.mark.slow
def test_killed_twelve_times_every_message_is_answered_exactly_once(
    rounds: SigkillRounds[Discord],
) -> None:
    run(rounds, kills=12)
