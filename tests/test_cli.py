"""The `wakeful` CLI: init, usage errors, and talking to a real test server."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from starlette.applications import Starlette

from tests.test_http_api import TOKEN, MemoryDaemon, serve
from wakeful.app.config import load_settings
from wakeful.app.http.app import create_app
from wakeful.cli.main import main
from wakeful.kernel.events import Event


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in an empty directory with no WAKEFUL_* settings."""
    for name in list(os.environ):
        if name.startswith("WAKEFUL_") or name == "STATE_DIRECTORY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WAKEFUL_DAEMON__DATA_DIR", str(tmp_path / "data"))


def test_init_writes_a_loadable_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """init writes the starter config, and refuses to overwrite without --force."""
    assert main(["init"]) == 0
    path = tmp_path / "wakeful.toml"
    assert load_settings(path).server.bind == "127.0.0.1:8787"
    path.write_text("# mine\n")
    assert main(["init"]) == 1
    assert "--force" in capsys.readouterr().err
    assert path.read_text() == "# mine\n"
    assert main(["init", "--force"]) == 0
    assert "[llm]" in path.read_text()


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A missing subcommand or argument is a usage error with exit code 2."""
    assert main([]) == 2
    assert main(["send"]) == 2
    assert main(["events", "--limit", "0"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_missing_config_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """Naming a config file that does not exist is a one-line config error."""
    assert main(["-c", "nope.toml", "status"]) == 2
    err = capsys.readouterr().err
    assert "nope.toml" in err and err.count("\n") == 1


def test_bad_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A config with a bad key fails before any network access, naming the key."""
    (tmp_path / "wakeful.toml").write_text('[server]\nbind = "nowhere"\n')
    assert main(["status"]) == 2
    assert "server.bind" in capsys.readouterr().err


def test_unreachable_daemon_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    """With nothing listening, send says how to start the daemon."""
    os.environ["WAKEFUL_SERVER__BIND"] = "127.0.0.1:9"  # discard port: nothing listens
    try:
        assert main(["send", "hello"]) == 1
    finally:
        del os.environ["WAKEFUL_SERVER__BIND"]
    assert "is `wakeful run` running?" in capsys.readouterr().err


async def run_cli(url: str, *argv: str) -> int:
    """Run the CLI in a worker thread against the server at ``url``."""
    port = url.rsplit(":", 1)[1]
    os.environ["WAKEFUL_SERVER__BIND"] = f"127.0.0.1:{port}"
    os.environ["WAKEFUL_SERVER__ADMIN_TOKEN"] = TOKEN
    try:
        return await anyio.to_thread.run_sync(main, list(argv))
    finally:
        del os.environ["WAKEFUL_SERVER__BIND"], os.environ["WAKEFUL_SERVER__ADMIN_TOKEN"]


def app_for(daemon: MemoryDaemon, heartbeat_s: float = 15.0) -> Starlette:
    return create_app(daemon, admin_token=TOKEN, max_body_bytes=4096, heartbeat_s=heartbeat_s)


@pytest.mark.anyio
async def test_send_posts_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    """send delivers the text to the daemon as the owner's message."""
    daemon = MemoryDaemon()
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, "send", "--session", "work", "--interrupt", "stop now") == 0
    [event] = daemon.submitted
    assert (event.session, event.kind, event.content.text) == ("work", "user.interrupt", "stop now")
    assert f"accepted {event.id}" in capsys.readouterr().out


@pytest.mark.anyio
async def test_send_wait_prints_replies_until_idle(capsys: pytest.CaptureFixture[str]) -> None:
    """send --wait prints every reply of the run and stops when the run is idle."""
    daemon = MemoryDaemon()

    async def answer(event: Event) -> None:
        said = {"type": "reply", "answers": event.id}
        daemon.publish(event.session, {"type": "run", "state": "running"})
        daemon.publish(event.session, {**said, "text": f"echo: {event.content.text}"})
        daemon.publish(event.session, {**said, "text": "done"})
        daemon.publish(event.session, {"type": "run", "state": "idle"})
        daemon.publish(event.session, {**said, "text": "too late"})

    daemon.on_submit = answer
    async with serve(app_for(daemon)) as url:
        with anyio.fail_after(10):
            assert await run_cli(url, "send", "--wait", "hi there") == 0
    assert capsys.readouterr().out.splitlines() == ["echo: hi there", "done"]


@pytest.mark.anyio
async def test_send_wait_times_out(capsys: pytest.CaptureFixture[str]) -> None:
    """send --wait gives up after --timeout when the run never ends."""
    daemon = MemoryDaemon()
    async with serve(app_for(daemon, heartbeat_s=0.05)) as url:
        with anyio.fail_after(10):
            assert await run_cli(url, "send", "--wait", "--timeout", "0.5", "hi") == 1
    assert "timed out" in capsys.readouterr().err
    assert len(daemon.submitted) == 1


@pytest.mark.anyio
async def test_status_prints_summary_and_model_howto(capsys: pytest.CaptureFixture[str]) -> None:
    """status prints the daemon's status and how to configure a missing model."""
    daemon = MemoryDaemon()

    async def status() -> dict[str, object]:
        return {"model": {"configured": False}, "sessions": {"main": "idle"}}

    daemon.status = status  # type: ignore[method-assign]
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, "status") == 0
    out = capsys.readouterr().out
    assert "sessions:" in out and "main: idle" in out
    assert "No model is configured" in out and "[llm]" in out


@pytest.mark.anyio
async def test_wrong_token_is_explained(capsys: pytest.CaptureFixture[str]) -> None:
    """A token mismatch says where the CLI read its token from."""
    daemon = MemoryDaemon()
    app = create_app(daemon, admin_token="another-token-entirely", max_body_bytes=4096)
    async with serve(app) as url:
        assert await run_cli(url, "status") == 1
    err = capsys.readouterr().err
    assert "refused the admin token" in err and TOKEN not in err


@pytest.mark.anyio
async def test_events_and_trajectory(capsys: pytest.CaptureFixture[str]) -> None:
    """events lists the log and trajectory shows messages by role."""
    daemon = MemoryDaemon()
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, "send", "first message") == 0
        assert await run_cli(url, "events", "--session", "main") == 0
        assert await run_cli(url, "trajectory", "main") == 0
    out = capsys.readouterr().out
    assert "user.input" in out and "first message" in out
    assert "── user" in out


@pytest.mark.anyio
async def test_send_wait_without_model_explains(capsys: pytest.CaptureFixture[str]) -> None:
    """send --wait stores the message but says no reply will come without a model."""
    daemon = MemoryDaemon()

    async def status() -> dict[str, object]:
        return {"model": {"configured": False, "how_to_configure": "set [llm] model"}}

    daemon.status = status  # type: ignore[method-assign]
    async with serve(app_for(daemon)) as url:
        assert await run_cli(url, "send", "--wait", "hello") == 1
    assert "set [llm] model" in capsys.readouterr().err
    assert len(daemon.submitted) == 1


def test_closed_pipe_is_not_an_error(tmp_path: Path) -> None:
    """Output to a reader that has gone (`wakeful status | head`) ends quietly with 0."""
    import subprocess
    import sys

    script = (
        "import os, sys\n"
        "from wakeful.cli.main import main\n"
        "read_end, write_end = os.pipe()\n"
        "os.close(read_end)\n"  # the reader is gone before anything is written
        "os.dup2(write_end, 1)\n"
        "sys.stdout = open(1, 'w', buffering=1)\n"
        "sys.exit(main(['init', '--path', sys.argv[1]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "w.toml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
