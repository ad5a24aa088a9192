"""Every command line in the README's and the operations guide's shell blocks runs,
exactly as written, in a fresh copy of the repository.

Only paths are substituted (/opt/wakeful, /etc/wakeful, /etc/systemd/system and ~
point into scratch directories); the port and data directory are moved by
environment overrides so tests can run side by side. A line that cannot run on
this machine (systemctl and friends: there is no systemd as PID 1 here) must be
listed in NOT_RUN with the reason, so a new line fails this test until it is
tested. What systemctl would start is the unit's ExecStart=, which
tests/test_units_exec.py runs verbatim; here it is run once more against the
install these commands made.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.daemon_process import free_port
from tests.test_units_exec import (
    check_serves_and_stops,
    load_credentials,
    service_env,
    started_as_systemd_would,
    unit_directive,
)

ROOT = Path(__file__).resolve().parent.parent
NOT_RUN = {
    "bash scripts/check.sh": "the test command itself: .ci/run runs it (checked below)",
    "systemctl daemon-reload && systemctl enable --now wakeful": "no systemd as PID 1 here",
    "systemctl status wakeful": "no systemd as PID 1 here",
    "systemctl --user daemon-reload && systemctl --user enable --now wakeful": "no systemd",
    'loginctl enable-linger "$USER"': "no systemd-logind here",
    "systemctl restart wakeful": "no systemd as PID 1 here",
}


def shell_lines(document: Path) -> list[str]:
    """The command lines of a Markdown file's ```sh blocks (comment-only lines skipped)."""
    lines, inside = [], False
    for line in document.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh" if not inside else False
            continue
        if inside and line.strip() and not line.lstrip().startswith("#"):
            lines.append(line.strip())
    return lines


def _copy_of_repository(target: Path) -> Path:
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _env(home: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WAKEFUL_", "VIRTUAL_ENV"))}
    env.pop("STATE_DIRECTORY", None)
    env.pop("CREDENTIALS_DIRECTORY", None)
    return {
        **env,
        "HOME": str(home),
        "USER": "wakeful-test",
        "OPENAI_API_KEY": "sk-documented-commands-test",
        "WAKEFUL_SERVER__BIND": f"127.0.0.1:{port}",
        "WAKEFUL_DAEMON__DATA_DIR": str(home / "data"),
    }


def _run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{line!r} failed: {result.stderr[-2000:]}"
    return result


class Foreground:
    """A documented line that runs the daemon in the foreground, until told to stop."""

    def __init__(self, line: str, cwd: Path, env: dict[str, str], port: int) -> None:
        self.port = port
        self.proc = subprocess.Popen(
            ["bash", "-c", line],
            cwd=cwd,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def wait_listening(self, timeout_s: float = 240) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # the install before it may print first
            if "wakeful is listening" in line:
                break
        else:
            raise AssertionError(f"exited {self.proc.wait()} before listening")
        answer = httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=timeout_s)
        assert answer.status_code == 200

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        assert self.proc.wait(30) == 0
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def copy_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield _copy_of_repository(tmp_path_factory.mktemp("repo"))


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run executes exactly the README's second command."""
    assert shell_lines(ROOT / "README.md")[1] == "bash scripts/check.sh"
    assert "exec bash scripts/check.sh" in (ROOT / ".ci" / "run").read_text()


def test_readme_commands_run_as_written(copy_dir: Path, tmp_path: Path) -> None:
    """The two commands and the usage lines, in order, in a fresh copy."""
    lines = shell_lines(ROOT / "README.md")
    port = free_port()
    env = _env(tmp_path / "home", port)
    (tmp_path / "home").mkdir()
    seen: list[str] = []
    daemon: Foreground | None = None
    try:
        for line in lines:
            if line in NOT_RUN:
                continue
            seen.append(line)
            command = line.split("  #")[0].strip()  # a trailing comment is part of the line
            if command.endswith(("wakeful run", "wakeful run -c wakeful.toml")):
                if daemon is not None:
                    daemon.stop()
                daemon = Foreground(line, copy_dir, env, port)
                daemon.wait_listening()
            elif " send " in command:
                assert _run(line, copy_dir, env).stdout.startswith("accepted ")
            elif " status " in command:
                assert "events: 1 accepted" in _run(line, copy_dir, env).stdout
            else:
                _run(line, copy_dir, env)
    finally:
        if daemon is not None:
            daemon.stop()
    assert len(seen) == len(lines) - 1  # all but the test command itself


def test_operations_guide_commands_run_as_written(copy_dir: Path, tmp_path: Path) -> None:
    """The system-service, user-service and upgrade lines of docs/operations.md, with
    /opt/wakeful, /etc/wakeful, /etc/systemd/system and ~ in scratch directories."""
    lines = shell_lines(ROOT / "docs" / "operations.md")
    root = tmp_path / "root"
    paths = {
        "/opt/wakeful": str(root / "opt" / "wakeful"),
        "/etc/systemd/system": str(root / "systemd"),
        "/etc/wakeful": str(root / "etc" / "wakeful"),
    }
    (root / "systemd").mkdir(parents=True)
    (root / "etc").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = _env(home, free_port())
    for line in lines:
        if line in NOT_RUN:
            continue
        for path, scratch in paths.items():
            line = line.replace(path, scratch)
        _run(line, copy_dir, env)
    # What `systemctl enable --now wakeful` would start, from what was installed.
    unit = root / "systemd" / "wakeful.service"
    _start_installed_unit(unit, paths, root / "etc" / "wakeful", tmp_path / "state")
    assert (home / ".config" / "systemd" / "user" / "wakeful.service").is_file()
    # Each unit's Documentation= names a file the install put there.
    for installed, prefix in (
        (unit, paths["/opt/wakeful"]),
        (home / ".config/systemd/user/wakeful.service", str(home / ".local/share/wakeful-venv")),
    ):
        (link,) = unit_directive(installed, "Documentation")
        target = link.removeprefix("file:").replace("/opt/wakeful", prefix)
        target = target.replace("%h/.local/share/wakeful-venv", prefix)
        assert Path(target).is_file(), link
    assert (home / ".config" / "wakeful" / "wakeful.toml").is_file()


def _start_installed_unit(unit: Path, paths: dict[str, str], etc: Path, state: Path) -> None:
    (exec_start,) = unit_directive(unit, "ExecStart")
    for path, scratch in paths.items():
        exec_start = exec_start.replace(path, scratch)
    credentials = state.parent / "credentials"
    state.mkdir(mode=0o700)
    credentials.mkdir(mode=0o700)
    load_credentials(unit, etc, credentials)
    port = free_port()
    env = service_env(state, credentials, port)
    with started_as_systemd_would(shlex.split(exec_start), env, state, port) as (proc, notify):
        check_serves_and_stops(proc, notify, port)
