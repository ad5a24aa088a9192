"""Slack's Events API ack: a signed event POSTed → the daemon's 200 (Slack allows 3 s).

In-process daemon with one ``[[chat.slack]]`` app, the fake model (every
message answered, so sessions are busy while events keep coming) and the
fake Slack. Measured from one keep-alive client: a new owner message (verify,
parse, commit, 200), the same event again as Slack's retry (the duplicate
path), and a stranger's message (pairing: a state write and an outbox send).
Baseline in the same run: ``url_verification`` (signature and parse, no store).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    print_table,
    quiet_daemon_logs,
    run_like_the_daemon,
)
from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi, SlackEventSender, message_envelope
from tests.fakes.slack_api import url_verification as challenge
from tests.test_slack_channel import OWNER, slack_entry


async def timed(
    client: httpx.AsyncClient, sender: SlackEventSender, make: Callable[[int], dict[str, Any]],
    n: int, **options: Any,
) -> list[float]:  # fmt: skip
    samples = []
    for i in range(n):
        envelope = make(i)
        started = time.perf_counter()
        response = await sender.adeliver(client, envelope, **options)
        samples.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
    return samples


async def main(n: int) -> None:
    quiet_daemon_logs()
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as model, FakeSlackApi() as slack:
        model.responder = lambda body: Reply(text="ok")
        entry = slack_entry(Path(tmp), slack.api_base)
        settings = daemon_settings(Path(tmp) / "data", model.base_url, chat={"slack": [entry]})
        async with harness(settings) as daemon, httpx.AsyncClient() as client:
            sender = SlackEventSender(f"{daemon.running.url}/chat/slack/work/events")
            owner = [message_envelope(f"m{i}", user=OWNER) for i in range(n)]
            rows = [
                ms_row("url_verification (baseline)",
                       await timed(client, sender, lambda i: challenge(f"c{i}"), n)),
                ms_row("owner message → 200", await timed(client, sender, owner.__getitem__, n)),
                ms_row("Slack retry (duplicate) → 200",
                       await timed(client, sender, owner.__getitem__, n, retry_num=1)),
                ms_row("stranger (pairing) → 200", await timed(
                    client, sender, lambda i: message_envelope("hi", user=f"U0STR{i:05d}"), n)),
            ]  # fmt: skip
            print_table(LATENCY_HEADER, rows)


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 300).parse_args()
    run_like_the_daemon(main, args.n)
