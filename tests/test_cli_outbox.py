"""`wakeful send --wait` against a real in-process daemon: it first shows what is unread
(said while no client was there) labelled on stderr, then the run's replies to its own
message on stdout, and acknowledges them all."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply
from tests.test_cli import run_cli
from tests.test_http_api import TOKEN

pytestmark = pytest.mark.anyio
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")  # the in-process daemon's


def printed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the CLI printed on stdout (the daemon in this process logs there too)."""
    return [line for line in capsys.readouterr().out.splitlines() if not LOG_LINE.match(line)]


async def test_send_wait_shows_unread_first_and_acknowledges(
    tmp_path: Path, model_server: FakeModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    model_server.push(Reply(text="said while away"), Reply(text="an answer"), Reply(text="more"))
    settings = daemon_settings(
        tmp_path, model_server.base_url, server={"bind": "127.0.0.1:0", "admin_token": TOKEN}
    )
    async with harness(settings) as h:
        async with watch_feed(h) as feed:  # watching is not acknowledging: it stays unread
            await h.send("something to do")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        with anyio.fail_after(20):
            assert await run_cli(h.running.url, "send", "--wait", "a question") == 0
            captured = capsys.readouterr()
            unread = (await h.client.get("/api/sessions/main/outbox?unread=1")).json()
            assert await run_cli(h.running.url, "send", "--wait", "another") == 0
            second = printed(capsys)
    first = [line for line in captured.out.splitlines() if not LOG_LINE.match(line)]
    assert first == ["an answer"]  # stdout: only the answer to this message
    assert "[unread, from before this message] said while away" in captured.err
    assert unread["messages"] == []
    assert second == ["more"]


async def test_send_wait_exits_1_when_the_real_model_refuses_the_key(
    tmp_path: Path, model_server: FakeModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against a real daemon: a 401 ends the run with no reply, and send --wait says why."""
    model_server.push(Reply(status=401, error_message="Incorrect API key provided"))
    settings = daemon_settings(
        tmp_path, model_server.base_url, server={"bind": "127.0.0.1:0", "admin_token": TOKEN}
    )
    async with harness(settings) as h:
        with anyio.fail_after(20):
            assert await run_cli(h.running.url, "send", "--wait", "hello") == 1
    err = capsys.readouterr().err
    assert "wakeful: no reply: run stopped: the model endpoint" in err
    assert "refused the API key (HTTP 401)" in err and "[llm] api_key_env" in err
    assert len(model_server.requests) == 1
