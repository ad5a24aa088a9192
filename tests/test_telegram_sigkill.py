"""SIGKILL a real `wakeful run` in the middle of a Telegram conversation, again and again
(tests/support/sigkill_rounds.py): killed while the model streams the answer, right
after the answer reached Telegram, while Telegram is down and the answer waits for a
retry, and right after the message was written (before or after the daemon saw it).
In the end every message has been answered exactly once in the chat: none twice, none
lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.model_server import FakeModelServer
from tests.fakes.telegram_api import FakeTelegramApi, bot_config
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

OWNER = 4242


class Telegram(ChatPlatform):
    def __init__(self, telegram: FakeTelegramApi) -> None:
        self.telegram = telegram
        self.secrets = (telegram.token,)

    def say(self, text: str) -> None:
        self.telegram.user_says(OWNER, text)

    def posted(self) -> list[str]:
        return [m.visible for m in self.telegram.sent_to(OWNER)]

    def wait_for(self, condition: Callable[[], object], timeout_s: float, what: str) -> None:
        self.telegram.wait_for(condition, timeout_s, what)


@pytest.fixture
def rounds(
    tmp_path: Path, model_server: FakeModelServer, request: pytest.FixtureRequest
) -> Iterator[SigkillRounds[Telegram]]:
    """Polling mode unless the test is parametrized with ``rounds`` (the mode)."""
    mode = getattr(request, "param", "polling")
    with FakeTelegramApi() as telegram:

        def section(port: int) -> str:
            webhook = {"mode": mode, "public_url": f"http://127.0.0.1:{port}"}
            extra = webhook if mode == "webhook" else {}
            entry = bot_config(telegram, tmp_path, allowed_user_ids=[OWNER], **extra)
            return toml_table("chat.telegram", entry)

        config, port = chat_config(tmp_path, model_server.base_url, section)
        with sigkill_rounds(Telegram(telegram), model_server, config, port) as r:
            yield r


def run(r: SigkillRounds[Telegram], kills: int) -> None:
    telegram = r.platform.telegram
    while_telegram_is_down = while_sends_fail(
        lambda: telegram.fail("down", methods={"sendMessage"}), telegram.recover
    )
    r.run(cycle([mid_stream, after_the_answer, while_telegram_is_down, at_once], kills))
    assert any("telegram bot ready" in line for line in r.logs())


def test_killed_repeatedly_every_message_is_answered_exactly_once(
    rounds: SigkillRounds[Telegram],
) -> None:
    """Three kills (mid-stream, after the answer, while Telegram is down): each answered once."""
    run(rounds, kills=3)


@pytest.mark.slow
@pytest.mark.parametrize("rounds", ["polling", "webhook"], indirect=True)
def test_killed_twenty_times_every_message_is_answered_exactly_once(
    rounds: SigkillRounds[Telegram],
) -> None:
    """Twenty kills over every kill point, in both modes: none answered twice, none lost.
    (Webhook mode: Telegram re-posts what a killed daemon did not answer 200.)"""
    run(rounds, kills=20)
