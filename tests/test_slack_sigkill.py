"""SIGKILL a real `wakeful run` while Slack keeps retrying what it did not see acked
(tests/support/sigkill_rounds.py).

Messages are sent one after another (each answered before the next, so every
model call answers one message); at chosen messages the daemon is killed
with SIGKILL after a random delay — before the ack, between the ack and the
model, mid-stream, mid-send — and started again on the same data_dir while
the Slack sender retries with ``X-Slack-Retry-Num``. No message may be
answered twice and none lost: each is in the conversation once and is
answered by exactly one post, or — only when the kill fell between the
outbox's claim and Slack's answer — its reply is reported ``unknown``,
visible to the owner and never resent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_api import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlackApi,
    SlackEventSender,
    message_envelope,
)
from tests.support.chat_config import chat_config
from tests.support.sigkill_rounds import QUICK_ECHO, Redelivering, random_kills, sigkill_rounds

OWNER = "U0OWNER01"


def slack_section(tmp_path: Path, api_base: str) -> str:
    (tmp_path / "slack-token").write_text(BOT_TOKEN + "\n")
    (tmp_path / "slack-signing").write_text(SIGNING_SECRET + "\n")
    return (
        "[[chat.slack]]\n"
        'name = "work"\n'
        f'bot_token_file = "{tmp_path / "slack-token"}"\n'
        f'signing_secret_file = "{tmp_path / "slack-signing"}"\n'
        f'api_base = "{api_base}"\n'
        f'allowed_user_ids = ["{OWNER}"]\n'
    )


class Slack(Redelivering):
    secrets = (BOT_TOKEN, SIGNING_SECRET)

    def __init__(self, slack: FakeSlackApi, port: int, seed: int) -> None:
        super().__init__()
        self.slack, self.seed = slack, seed
        self.sender = SlackEventSender(f"http://127.0.0.1:{port}/chat/slack/work/events")

    def deliver_until_acked(self, text: str, number: int) -> int:
        envelope = message_envelope(text, user=OWNER, event_id=f"Ev{self.seed}x{number:04d}")
        return self.sender.deliver_until_acked(envelope)

    def posted(self) -> list[str]:
        return [post.text for post in self.slack.posts_snapshot()]


def run_kills(
    tmp_path: Path, model: FakeModelServer, messages: int, kills: int, seed: int
) -> dict[str, Any]:
    with FakeSlackApi() as api:
        config, port = chat_config(tmp_path, model.base_url, slack_section(tmp_path, api.api_base))
        slack = Slack(api, port, seed)
        with sigkill_rounds(slack, model, config, port, QUICK_ECHO) as r:
            unknown = r.run(random_kills(seed, messages, kills))
            forged = slack.sender.deliver(message_envelope("hi", user=OWNER), secret="forged")
    return {"unknown": unknown, "sends": slack.sends, "forged": forged, "lines": r.logs()}


def test_sigkill_while_slack_retries_answers_each_message_once(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Three kills over six messages."""
    seed = int(os.environ.get("WAKEFUL_KILL_SEED", "11"))
    result = run_kills(tmp_path, model_server, messages=6, kills=3, seed=seed)
    assert max(result["sends"]) > 1  # Slack had to retry at least one delivery
    # A forged request: 401 with its reason, one log line, no traceback; no secret logged.
    assert result["forged"].status_code == 401
    assert "signing secret" in result["forged"].json()["error"]
    log = "\n".join(result["lines"])
    assert log.count("slack request refused") == 1
    assert "Traceback" not in log


@pytest.mark.slow
def test_twenty_sigkills_while_slack_retries(tmp_path: Path, model_server: FakeModelServer) -> None:
    """Twenty kills over thirty messages."""
    seed = int(os.environ.get("WAKEFUL_KILL_SEED", "20"))
    result = run_kills(tmp_path, model_server, messages=30, kills=20, seed=seed)
    print(f"seed {seed}: {result['unknown']} of 30 replies left unknown by a kill mid-send")
