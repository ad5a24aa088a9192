"""The CLI's rough edges from issue 10: events paging and reasons, unknown sessions,
send --wait's exit code and its replies, against a real HTTP server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import ADMIN_TOKEN, daemon_settings, harness
from tests.daemon_process import DaemonProcess, free_port
from tests.test_cli import _isolated as _isolated  # autouse: no WAKEFUL_* settings
from tests.test_cli import app_for, run_cli
from tests.test_http_api import MemoryDaemon, serve
from wakeful.kernel.events import Event, user_message


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class RoutedDaemon(MemoryDaemon):
    """A MemoryDaemon whose log entries carry a routing decision."""

    async def event_log(
        self, session: str | None, after_seq: int = 0, limit: int = 200
    ) -> list[dict[str, Any]]:
        entries = await super().event_log(session, after_seq, limit)
        for entry in entries:
            entry.update(status="consumed", strategy="merge", reason="continues the open task")
        return entries


def fill(daemon: MemoryDaemon, count: int) -> None:
    daemon.submitted.extend(user_message(f"message {i}", event_id=f"m{i}") for i in range(count))


@pytest.mark.anyio
async def test_events_shows_the_newest_page_says_how_many_more_and_the_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """events: the newest N in time order, a hint naming --before/--all, and each reason."""
    daemon = RoutedDaemon()
    fill(daemon, 60)
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, "events", "-n", "5") == 0
        first = capsys.readouterr()
        assert await run_cli(url, "events", "-n", "5", "--before", "56") == 0
        second = capsys.readouterr()
        assert await run_cli(url, "events", "--all", "-n", "7") == 0
        every = capsys.readouterr()
    lines = first.out.splitlines()
    assert [line.split()[0] for line in lines] == ["56", "57", "58", "59", "60"]
    assert "message 59" in lines[-1]
    assert "[consumed/merge: continues the open task]" in lines[-1]
    assert "55 older events not shown" in first.err and "--before 56" in first.err
    assert "--all" in first.err
    assert [line.split()[0] for line in second.out.splitlines()] == ["51", "52", "53", "54", "55"]
    assert "50 older events" in second.err
    assert len(every.out.splitlines()) == 60 and every.err == ""


@pytest.mark.anyio
@pytest.mark.parametrize("command", [["trajectory", "nope"], ["events", "--session", "nope"]])
async def test_unknown_session_exits_1_naming_the_known_ones(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown session is one line naming the sessions there are, exit 1."""
    daemon = MemoryDaemon()
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, *command) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "wakeful: no session 'nope' on this daemon; known sessions: main"
    )


@pytest.mark.anyio
async def test_an_empty_trajectory_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """A session whose events have not reached the model yet (none configured, say): the
    screen says it is empty rather than staying blank under the heading."""
    daemon = MemoryDaemon()
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, "trajectory", "main") == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().endswith(
        "(empty: nothing of session main has reached the model yet)"
    )


@pytest.mark.anyio
async def test_session_names_are_sent_as_one_url_segment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A name with `/`, `?` or `#` reaches the daemon as one escaped path segment."""
    seen: list[str] = []
    daemon = MemoryDaemon()

    async def trajectory(session: str, *, full: bool = False) -> list[dict[str, Any]]:
        seen.append(session)
        return [{"role": "user", "content": "hi"}] if session.startswith("user:") else []

    daemon.trajectory = trajectory  # type: ignore[method-assign]
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, "trajectory", "user:al@x?y#z") == 0
        assert await run_cli(url, "trajectory", "a/b") == 1
    assert seen == ["user:al@x?y#z", "a/b"]  # the routes take an escaped `/` too
    assert "no session 'a/b'" in capsys.readouterr().err


async def _reply_then(daemon: MemoryDaemon, event: Event, *items: dict[str, Any]) -> None:
    daemon.publish(event.session, {"type": "run", "state": "running"})
    for item in items:
        daemon.publish(event.session, item)
    daemon.publish(event.session, {"type": "run", "state": "idle"})


@pytest.mark.anyio
async def test_send_wait_exits_1_when_the_model_failed(capsys: pytest.CaptureFixture[str]) -> None:
    """A run that ended without a reply because the model failed is exit 1, with the reason."""
    daemon = MemoryDaemon()

    async def fail(event: Event) -> None:
        await _reply_then(
            daemon,
            event,
            {"type": "alert", "text": "model call failed: 401 invalid api key"},
            {"type": "alert", "text": "run stopped: the model failed 3 times in a row"},
        )

    daemon.on_submit = fail
    async with serve(app_for(daemon)) as url:
        with anyio.fail_after(10):
            assert await run_cli(url, "send", "--wait", "hi") == 1
    err = capsys.readouterr().err
    assert "no reply: model call failed: 401 invalid api key" in err
    assert err.count("401 invalid api key") == 1, err  # said once, as the reason


@pytest.mark.anyio
async def test_send_wait_prints_only_the_replies_to_its_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Replies answering another event are not this message's; a batch's reply is."""
    daemon = MemoryDaemon()

    async def answer(event: Event) -> None:
        await _reply_then(
            daemon,
            event,
            {"type": "event", "event_id": "earlier"},
            {"type": "event", "event_id": event.id},
            {"type": "event", "event_id": "batched-after"},
            {"type": "reply", "text": "to someone else", "answers": "earlier"},
            {"type": "reply", "text": "for you", "answers": event.id},
            {"type": "reply", "text": "for the batch", "answers": "batched-after"},
            {"type": "reply", "text": "unprompted"},
        )

    daemon.on_submit = answer
    async with serve(app_for(daemon)) as url:
        with anyio.fail_after(10):
            assert await run_cli(url, "send", "--wait", "hi") == 0
    assert capsys.readouterr().out.splitlines() == ["for you", "for the batch"]


def _task(task_id: str, state: str, preview: str = "") -> dict[str, Any]:
    task: dict[str, Any] = {"task_id": task_id, "tool": "shell_exec", "state": state}
    task.update(runtime_s=1.5, arguments='{"command": "make"}')
    if preview:
        task["result_preview"] = preview
    return task


@pytest.mark.anyio
async def test_status_is_compact_with_recent_tasks_and_model_health(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Running tasks and the 3 latest finished, one line each, a count of the rest, and
    the model's health; --json keeps everything."""
    daemon = MemoryDaemon()
    finished = [_task(f"t{i}", "done", f"line one of {i}\nline two\nline three") for i in range(20)]
    health = {"state": "failing", "last_error": "09:00: HTTP 401", "failing_since": "09:00"}

    async def status() -> dict[str, Any]:
        tasks = [*finished[:10], _task("live", "running"), *finished[10:]]
        model = {"configured": True, "health": health}
        return {"model": model, "sessions": {"main": {"busy": True, "tasks": tasks}}}

    daemon.status = status  # type: ignore[method-assign]
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, "status") == 0
        short = capsys.readouterr().out
        assert await run_cli(url, "status", "--json") == 0
        full = capsys.readouterr().out
    task_lines = [line.strip() for line in short.splitlines() if line.strip().startswith("- ")]
    assert task_lines == [
        '- live  shell_exec  running  1.5s  {"command": "make"}',
        "- t17  shell_exec  done  1.5s  line one of 17 line two line three",
        "- t18  shell_exec  done  1.5s  line one of 18 line two line three",
        "- t19  shell_exec  done  1.5s  line one of 19 line two line three",
        "- (+17 older finished tasks)",
    ]
    assert "line two\n" not in short and len(short.splitlines()) < 20
    assert "failing_since: 09:00" in short and "last_error: 09:00: HTTP 401" in short
    assert full.count('"task_id"') == 21


@pytest.mark.anyio
async def test_events_pages_a_real_daemon_log_with_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole path on a real daemon and store: newest page, the count, the reason."""
    settings = daemon_settings(tmp_path / "d", "http://127.0.0.1:9/v1", llm={"model": ""})
    async with harness(settings) as h:
        for i in range(4):
            await h.send(f"note {i}")
        capsys.readouterr()
        assert await run_cli(h.running.url, "events", "-n", "2") == 0
        captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if "user.input" in line]
    assert ["note 2" in lines[0], "note 3" in lines[1]] == [True, True]
    assert "2 older events not shown" in captured.err
    assert all("[pending/" in line and ": " in line.split("[pending/")[1] for line in lines)


def test_one_model_failure_is_said_once_by_send_wait(tmp_path: Path) -> None:
    """A daemon on its defaults whose model endpoint is down: the run retries and stops;
    `send --wait` says the error once (last, as the reason for exit 1) and that the run
    stopped, instead of the same error three to five times."""
    port = free_port()
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    config = tmp_path / "wakeful.toml"  # the defaults, retries and backoff included
    config.write_text(
        f'[daemon]\ndata_dir = "{tmp_path}"\n'
        f'[server]\nbind = "127.0.0.1:{port}"\nadmin_token = "{ADMIN_TOKEN}"\n'
        f'[llm]\nbase_url = "{dead}"\nmodel = "m"\n',
        encoding="utf-8",
    )
    with DaemonProcess(config, port):
        done = subprocess.run(
            [sys.executable, "-m", "wakeful", "-c", str(config), "send", "--wait", "hi"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert done.stderr.count("cannot reach the model endpoint") == 1, done.stderr
    assert lines[-1].startswith("wakeful: no reply: model call failed: cannot reach"), lines
    assert len(lines) == 2 and lines[0].startswith("[alert] run stopped: the model failed 3 times")
