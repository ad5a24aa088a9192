"""`wakeful trajectory --raw`: the exact request the next model call sends, from a real
daemon; the default output says it is the conversation as the model sees it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import ADMIN_TOKEN, daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply
from tests.test_cli import _isolated as _isolated  # autouse: no WAKEFUL_* settings
from wakeful.cli.main import main
from wakeful.core.loop.status_bar import STATUS_BAR_HEADER

pytestmark = pytest.mark.anyio


async def _cli(url: str, monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    monkeypatch.setenv("WAKEFUL_SERVER__BIND", url.removeprefix("http://"))
    monkeypatch.setenv("WAKEFUL_SERVER__ADMIN_TOKEN", ADMIN_TOKEN)
    return await anyio.to_thread.run_sync(main, list(argv))


async def test_raw_is_the_request_the_next_model_call_sends(
    tmp_path: Path,
    model_server: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--raw shows system prompt, tools and status bar; the next call sends that prefix,
    byte for byte, plus the new message; no model call is made to show it."""
    model_server.push(Reply(text="first answer"), Reply(text="second answer"))
    settings = daemon_settings(tmp_path / "data", model_server.base_url)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("first question")
        await feed.wait_for(lambda i: i.get("type") == "run" and i.get("state") == "idle")
        capsys.readouterr()
        assert await _cli(h.running.url, monkeypatch, "trajectory", "main", "--raw") == 0
        raw: dict[str, Any] = json.loads(capsys.readouterr().out)
        assert len(model_server.requests) == 1  # showing it called nothing
        assert await _cli(h.running.url, monkeypatch, "trajectory", "main") == 0
        plain = capsys.readouterr()
        await h.send("second question")
        await feed.wait_for(lambda i: i.get("text") == "second answer")
    sent = model_server.requests[1].body
    messages = raw["messages"]
    # The configured prompt, then (tools deferred by default) the other tools' names.
    assert messages[0]["role"] == "system"
    assert messages[0]["content"].startswith(settings.daemon.system_prompt)
    assert messages[-1]["content"].startswith(STATUS_BAR_HEADER)
    assert raw["tools"] and raw["tools"] == sent["tools"]
    assert {k: v for k, v in raw.items() if k != "messages"} == {
        k: v for k, v in sent.items() if k != "messages"
    }
    assert sent["messages"][: len(messages) - 1] == messages[:-1]
    assert "conversation as the model sees it" in plain.err and "--raw" in plain.err
    assert "--full" in plain.err
    assert "── system" not in plain.out and "first answer" in plain.out


async def test_raw_for_an_unknown_session_names_the_known_ones(
    tmp_path: Path,
    model_server: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = daemon_settings(tmp_path / "data", model_server.base_url)
    model_server.push(Reply(text="ok"))
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("hello")
        await feed.wait_for(lambda i: i.get("type") == "run" and i.get("state") == "idle")
        assert await _cli(h.running.url, monkeypatch, "trajectory", "nope", "--raw") == 1
    err = capsys.readouterr().err
    assert "no session 'nope'" in err and "known sessions: main" in err


async def test_raw_when_nothing_fits_says_why(
    tmp_path: Path,
    model_server: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A budget smaller than the tools alone: the run fails honestly, and --raw says the
    same in one line (it answered 500 and a traceback in the log)."""
    # ~2,000 tokens of resident tools and prompt: a 1,000-token budget cannot hold them.
    context = {"max_tokens": 1500, "reserve_tokens": 500}
    settings = daemon_settings(tmp_path / "data", model_server.base_url, context=context)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("hello")
        await feed.wait_for(lambda i: i.get("type") == "run" and i.get("state") == "idle")
        capsys.readouterr()
        assert await _cli(h.running.url, monkeypatch, "trajectory", "main", "--raw") == 1
    err = capsys.readouterr().err
    assert "no request can be built" in err and "cannot fit" in err, err
    assert "internal error" not in err


async def test_context_reset_as_the_readme_spells_it(
    tmp_path: Path,
    model_server: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`wakeful context reset SESSION` (README): says what it did; an unknown session is
    one line naming it, not a traceback."""
    model_server.push(Reply(text="ok"))
    settings = daemon_settings(tmp_path / "data", model_server.base_url)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("hello")
        await feed.wait_for(lambda i: i.get("type") == "run" and i.get("state") == "idle")
        capsys.readouterr()
        assert await _cli(h.running.url, monkeypatch, "context", "reset", "main") == 0
        assert capsys.readouterr().out.strip() == "session main had no failed compactions"
        assert await _cli(h.running.url, monkeypatch, "context", "reset", "nobody") == 1
    err = capsys.readouterr().err
    assert "nobody" in err and "Traceback" not in err, err
