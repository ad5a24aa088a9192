"""`wakeful doctor` finds each fault planted in a set-up, one line naming it and its fix,
and `--fix` repairs the safe one (permissions); a sound set-up with a running daemon is
all ok, exit 0. The installed command, a real daemon and a real fake model server."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


def doctor(config: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "wakeful", "-c", str(config), "doctor", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.stderr == "" or "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout.splitlines()


def failing(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("FAIL ")]


def private(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for folder, dirs, names in os.walk(path):
        for name in [*dirs, *names]:
            os.chmod(Path(folder) / name, 0o700 if name in dirs else 0o600)
    os.chmod(path, 0o700)
    return path


def test_a_sound_set_up_with_its_daemon_running_is_all_ok(
    tmp_path: Path, model: FakeModelServer
) -> None:
    port = free_port()
    config = write_config(private(tmp_path / "data"), model.base_url, port)
    private(tmp_path / "data")  # the config file in it too
    with DaemonProcess(config, port):
        code, lines = doctor(config)
    assert code == 0 and failing(lines) == [], lines
    parts = [line.split(":")[0].split()[-1] for line in lines]
    assert {"config", "data_dir", "daemon", "store", "model", "sandbox"} <= set(parts), lines
    assert any("running and ready" in line for line in lines)


def test_on_the_default_sandbox_the_report_is_findings_only(
    tmp_path: Path, model: FakeModelServer
) -> None:
    """The tests' config runs commands unconfined (tests/daemon_process.py says why); the
    default, sandbox = "auto", probes bubblewrap, which logs its choice in the daemon. The
    doctor probes too, and printed that log line above its report."""
    port = free_port()
    config = write_config(private(tmp_path / "data"), model.base_url, port)
    config.write_text(config.read_text().replace('sandbox = "none"\n', ""))
    private(tmp_path / "data")
    # The probe's scratch workspace (no workspace yet) is a temporary directory: in ours.
    code, lines = doctor(config, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert [line for line in lines if not line.startswith(("ok   ", "FAIL "))] == [], lines
    (sandbox,) = [line for line in lines if line.split(":")[0].endswith(" sandbox")]
    assert sandbox == "ok   sandbox: shell commands run in bubblewrap", lines
    assert code == 0, lines  # a daemon not started yet is not a fault


def test_each_planted_fault_is_one_line_with_its_fix(
    tmp_path: Path, model: FakeModelServer
) -> None:
    data = tmp_path / "data"
    port = free_port()
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    config = write_config(data, dead, port)
    with DaemonProcess(config, port) as daemon:  # makes the store
        daemon.send("hello")
    os.chmod(data, 0o755)  # planted: open to other users
    code, lines = doctor(config)
    assert code == 1
    (open_dir,) = [line for line in failing(lines) if line.startswith("FAIL data_dir:")]
    assert f"fix: chmod -R go-rwx {data}" in open_dir
    (unreachable,) = [line for line in failing(lines) if line.startswith("FAIL model:")]
    assert (
        "cannot reach" in unreachable
        and "fix: start the server or fix [llm] base_url" in unreachable
    )

    code, lines = doctor(config, "--fix")
    assert any(line.startswith("fixed data_dir:") for line in lines), lines
    assert data.stat().st_mode & 0o077 == 0
    _, lines = doctor(config)
    assert [line for line in failing(lines) if "data_dir" in line] == []

    # planted: a damaged store: its pages all in the file (the write-ahead log, which
    # SQLite reads first, checkpointed), then the first one overwritten past its header
    checkpoint = sqlite3.connect(data / "wakeful.db")
    checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    checkpoint.close()
    with (data / "wakeful.db").open("r+b") as db:
        db.seek(100)
        db.write(b"\xff" * 3000)
    _, lines = doctor(config)
    (store,) = [line for line in failing(lines) if line.startswith("FAIL store: wakeful.db")]
    assert "restore a backup (wakeful restore FILE)" in store


def test_a_refused_key_a_missing_sandbox_and_a_bad_config_are_named(
    tmp_path: Path, model: FakeModelServer
) -> None:
    data = private(tmp_path / "data")
    config = write_config(data, model.base_url, free_port())
    private(data)
    text = config.read_text().replace('sandbox = "none"', 'sandbox = "bubblewrap"')
    config.write_text(text)
    model.models_status = 401  # the endpoint refuses the key
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no bwrap on PATH
    code, lines = doctor(config, env=env)
    assert code == 1
    (key,) = [line for line in failing(lines) if line.startswith("FAIL model:")]
    assert "the key was refused (HTTP 401)" in key and "api_key_env" in key
    (sandbox,) = [line for line in failing(lines) if line.startswith("FAIL sandbox:")]
    assert "bubblewrap" in sandbox and "apt-get install bubblewrap" in sandbox

    broken = tmp_path / "broken.toml"
    broken.write_text("[llm]\nmax_retries = -3\n")
    code, lines = doctor(broken)
    assert code == 1 and len(lines) == 1 and lines[0].startswith("FAIL config: ")
    assert "max_retries" in lines[0]


def test_a_chat_accounts_refused_or_missing_credential_is_named_and_a_good_one_is_ok(
    tmp_path: Path, model: FakeModelServer
) -> None:
    """doctor asks Telegram's getMe with each bot's token, as the daemon would: the good
    bot is ok, a token Telegram refuses and a token file that is not there each fail
    with the account's name and the fix; no token is ever printed."""
    from tests.fakes.telegram_api import FakeTelegramApi, bot_config
    from tests.support.chat_config import toml_table

    data = private(tmp_path / "data")
    config = write_config(data, model.base_url, free_port())
    with FakeTelegramApi() as telegram:
        good = bot_config(telegram, tmp_path, name="good")
        refused_file = tmp_path / "refused-token"
        refused_file.write_text("123:not-the-token\n")
        refused = good | {"name": "refused", "bot_token_file": str(refused_file)}
        missing = good | {"name": "missing", "bot_token_file": str(tmp_path / "nowhere")}
        with config.open("a") as text:
            for entry in (good, refused, missing):
                text.write(toml_table("chat.telegram", entry))
        private(data)
        code, lines = doctor(config)
    assert code == 1
    chat = {line.split(":")[0]: line for line in lines if "chat.telegram" in line}
    assert "the credential is accepted (@" in chat["ok   chat.telegram 'good'"], lines
    assert "Telegram refused the token" in chat["FAIL chat.telegram 'refused'"]
    assert "fix: put a valid credential in" in chat["FAIL chat.telegram 'refused'"]
    assert "fix: write the credential to that file" in chat["FAIL chat.telegram 'missing'"]
    assert telegram.token not in "\n".join(lines) and "not-the-token" not in "\n".join(lines)
