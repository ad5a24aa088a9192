"""Each shipped unit's ExecStart= runs verbatim, with the environment systemd gives it.

Only /opt/wakeful, /etc/wakeful, %h, %E and %S are substituted (with this checkout's
venv and scratch directories); the command line is otherwise the unit's own. This
machine has no systemd as PID 1, so systemd's side (the notify socket, watchdog,
StateDirectory=, LoadCredential=, EnvironmentFile=) is played by the test.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.daemon_process import free_port
from tests.systemd_fake import NotifySocket

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
VENV = Path(sys.prefix)  # the venv running the tests: what /opt/wakeful holds when installed


def unit_directive(unit: Path, key: str) -> list[str]:
    prefix = f"{key}="
    return [
        line[len(prefix) :] for line in unit.read_text().splitlines() if line.startswith(prefix)
    ]


def _environment_file(path: Path) -> dict[str, str]:
    """What EnvironmentFile= reads: KEY=VALUE lines; comments and blanks skipped."""
    found: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                found[key] = value
    return found


def load_credentials(unit: Path, etc: Path, credentials: Path) -> None:
    """What LoadCredential=NAME:/etc/wakeful/... does: copy each file into place."""
    for spec in unit_directive(unit, "LoadCredential"):
        name, _, source = spec.partition(":")
        shutil.copy(source.replace("/etc/wakeful", str(etc), 1), credentials / name)


def service_env(state: Path, credentials: Path, port: int) -> dict[str, str]:
    """The environment systemd gives the system unit (the port moved for side-by-side runs)."""
    return {
        "PATH": os.environ["PATH"],
        "STATE_DIRECTORY": str(state),
        # CacheDirectory=: the per-worker directory the suite's conftest made (not the
        # checkout's wakeful/__pycache__, where the start-up code cache would otherwise go)
        "CACHE_DIRECTORY": os.environ["CACHE_DIRECTORY"],
        "CREDENTIALS_DIRECTORY": str(credentials),
        "WAKEFUL_SERVER__BIND": f"127.0.0.1:{port}",
    }


@contextmanager
def started_as_systemd_would(
    argv: list[str], env: dict[str, str], cwd: Path, port: int
) -> Iterator[tuple[subprocess.Popen[bytes], NotifySocket]]:
    with NotifySocket() as notify:
        env = {**env, "NOTIFY_SOCKET": notify.address, "WATCHDOG_USEC": "30000000"}
        proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            notify.wait_for("READY", timeout_s=30)
            yield proc, notify
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            assert proc.stdout is not None
            proc.stdout.close()


def check_serves_and_stops(proc: subprocess.Popen[bytes], notify: NotifySocket, port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # the bound port answers
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json() == {"status": "ok"}
    assert notify.wait_for("WATCHDOG", timeout_s=30)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert notify.with_key("STOPPING")


def test_system_unit_exec_start_runs_verbatim(tmp_path: Path) -> None:
    """deploy/wakeful.service's ExecStart= with deploy/wakeful.toml and its credentials."""
    unit = DEPLOY / "wakeful.service"
    (exec_start,) = unit_directive(unit, "ExecStart")
    etc, state, credentials = tmp_path / "etc", tmp_path / "state", tmp_path / "credentials"
    for directory in (etc / "credentials", state, credentials):
        directory.mkdir(parents=True, mode=0o700)
    shutil.copy(DEPLOY / "wakeful.toml", etc / "wakeful.toml")
    shutil.copy(DEPLOY / "wakeful.env", etc / "wakeful.env")
    # The files LoadCredential= names, then copied as systemd does.
    for spec in unit_directive(unit, "LoadCredential"):
        name, _, source = spec.partition(":")
        Path(source.replace("/etc/wakeful", str(etc))).write_text(f"secret-for-{name}\n")
    load_credentials(unit, etc, credentials)
    port = free_port()
    line = exec_start.replace("/opt/wakeful", str(VENV)).replace("/etc/wakeful", str(etc))
    env_file = unit_directive(unit, "EnvironmentFile")[0].lstrip("-")
    env = {
        **_environment_file(Path(env_file.replace("/etc/wakeful", str(etc)))),
        # The shipped config binds 127.0.0.1:8787; tests run side by side.
        **service_env(state, credentials, port),
    }
    with started_as_systemd_would(shlex.split(line), env, state, port) as (proc, notify):
        check_serves_and_stops(proc, notify, port)
    assert (state / "wakeful.db").is_file()  # data went to StateDirectory=


def test_user_unit_exec_start_runs_verbatim(tmp_path: Path) -> None:
    """deploy/user/wakeful.service's ExecStart= with the config `wakeful init` writes."""
    unit = DEPLOY / "user" / "wakeful.service"
    (exec_start,) = unit_directive(unit, "ExecStart")
    home = tmp_path / "home"
    config_home, state = home / ".config", home / ".local" / "state" / "wakeful"
    venv_link = home / ".local" / "share" / "wakeful-venv"
    venv_link.parent.mkdir(parents=True)
    venv_link.symlink_to(VENV)
    state.mkdir(parents=True, mode=0o700)
    (config_home / "wakeful").mkdir(parents=True)
    # A user's login environment; CACHE_DIRECTORY only so that the start-up code cache
    # lands under the run's temporary root, not beside this checkout's bytecode.
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CACHE_DIRECTORY": os.environ["CACHE_DIRECTORY"],
    }
    init = subprocess.run(
        [
            str(venv_link / "bin" / "wakeful"),
            "init",
            "--path",
            str(config_home / "wakeful" / "wakeful.toml"),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrote" in init.stdout
    port = free_port()
    line = exec_start.replace("%h", str(home)).replace("%E", str(config_home))
    env = {**env, "STATE_DIRECTORY": str(state), "WAKEFUL_SERVER__BIND": f"127.0.0.1:{port}"}
    with started_as_systemd_would(shlex.split(line), env, home, port) as (proc, notify):
        # The CLI, run as the user outside systemd (no STATE_DIRECTORY, no -c), finds
        # the same config, data directory and generated token as the service.
        cli_env = {k: v for k, v in env.items() if k != "STATE_DIRECTORY"}
        status = subprocess.run(
            [str(venv_link / "bin" / "wakeful"), "status"],
            env=cli_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert status.returncode == 0, status.stderr
        assert "events: 0 accepted" in status.stdout, status.stdout
        check_serves_and_stops(proc, notify, port)
    assert (state / "wakeful.db").is_file()
    assert not (home / ".local" / "share" / "wakeful").exists()  # no stray second data dir
