"""The shipped system unit under a real systemd: start (READY), reload, stop.

This machine has no systemd as PID 1, but systemd runs as PID 1 of a PID and mount
namespace of the test's own. The unit is the shipped file with only /opt/wakeful and
/etc/wakeful substituted, plus one drop-in: ``LoadCredential=`` is reset, because this
sandbox's kernel refuses the credentials mount ("Failed to set up credentials:
Protocol error"); the secrets come in as environment overrides instead. Debian's
python3 builds the venv, because ``ProtectHome=yes`` (rightly) hides a Python that
lives under /root.

It takes about 40 s (a venv install and a whole service manager). The target it
boots has ``DefaultDependencies=no``, the tmpfiles units are masked and /tmp and
/var/tmp are private to the namespace: the file system is shared with the host, and
``systemd-tmpfiles --boot`` would empty them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.daemon_process import free_port

ROOT = Path(__file__).resolve().parent.parent
SYSTEMD = Path("/lib/systemd/systemd")
DEBIAN_PYTHON = Path("/usr/bin/python3")

TMPFILES_UNITS = (
    "systemd-tmpfiles-setup.service",
    "systemd-tmpfiles-setup-dev.service",
    "systemd-tmpfiles-setup-dev-early.service",
    "systemd-tmpfiles-clean.service",
    "systemd-tmpfiles-clean.timer",
)


def _world_readable_tmp() -> Path:
    # DynamicUser= runs as a fresh uid: everything it reads must be world-readable,
    # and pytest's tmp_path is not; PrivateTmp= hides /tmp and /var/tmp from it.
    base = Path("/srv") / f"wakeful-systemd-test-{os.getpid()}"
    base.mkdir(mode=0o755)
    return base


@pytest.fixture
def scratch() -> Iterator[Path]:
    base = _world_readable_tmp()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _install(scratch: Path) -> Path:
    venv = scratch / "opt"
    subprocess.run([str(DEBIAN_PYTHON), "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], check=True, timeout=300)
    return venv


def _units(scratch: Path, venv: Path, port: int) -> Path:
    units = scratch / "units"
    (units / "wakeful.service.d").mkdir(parents=True)
    etc = scratch / "etc"
    etc.mkdir()
    shutil.copy(ROOT / "deploy" / "wakeful.toml", etc)
    shutil.copy(ROOT / "deploy" / "wakeful.env", etc)
    text = (ROOT / "deploy" / "wakeful.service").read_text()
    text = text.replace("/opt/wakeful", str(venv)).replace("/etc/wakeful", str(etc))
    (units / "wakeful.service").write_text(text)
    (units / "wakeful.service.d" / "no-credentials.conf").write_text(
        "[Service]\nLoadCredential=\n"
        "Environment=WAKEFUL_SERVER__ADMIN_TOKEN=test-token WAKEFUL_LLM__API_KEY=sk-test "
        f"WAKEFUL_SERVER__BIND=127.0.0.1:{port}\n"
    )
    (units / "wakeful-test.target").write_text(
        "[Unit]\nDescription=only what the test starts\nDefaultDependencies=no\n"
    )
    for unit in TMPFILES_UNITS:  # masked: they would clean the shared file system
        (units / unit).symlink_to("/dev/null")
    subprocess.run(["chmod", "-R", "a+rX", str(scratch)], check=True)
    return units


@pytest.fixture
def systemd(scratch: Path) -> Iterator[tuple[Path, int, int]]:
    port = free_port()
    venv = _install(scratch)
    units = _units(scratch, venv, port)
    boot = scratch / "boot.sh"
    # Private /tmp and /var/tmp: the sysinit units the service pulls in empty them
    # (systemd-tmpfiles --boot), and the rest of the file system is shared.
    boot.write_text(
        f"#!/bin/sh\nmount --bind {units} /etc/systemd/system\n"
        "mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /var/tmp\n"
        f"exec {SYSTEMD} --system --unit=wakeful-test.target\n"
    )
    boot.chmod(0o755)
    manager = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "--mount", str(boot)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield scratch, _namespace_init(manager.pid), port
    finally:
        for child in _children(manager.pid):
            os.kill(child, signal.SIGKILL)  # PID 1 of the namespace: all of it goes
        manager.kill()
        manager.wait(10)


def _systemctl(pid: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nsenter", "-t", str(pid), "-m", "-p", "systemctl", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _namespace_init(unshare_pid: int) -> int:
    """The host pid of the namespace's PID 1 (systemd), once it answers systemctl."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in _children(unshare_pid):
            state = _systemctl(pid, "is-system-running").stdout.strip()
            if state in ("initializing", "starting", "running", "degraded"):
                return pid
        time.sleep(0.2)  # another process's start-up: nothing to wait on but time
    raise TimeoutError("systemd did not come up in its namespace")


def test_the_system_unit_starts_reloads_and_stops_under_systemd(
    systemd: tuple[Path, int, int],
) -> None:
    _, pid, port = systemd
    started = _systemctl(pid, "start", "wakeful")  # returns once READY=1 arrived
    assert started.returncode == 0, _systemctl(pid, "status", "wakeful").stdout
    status = _systemctl(pid, "show", "wakeful", "-p", "StatusText", "-p", "ActiveState")
    assert "ActiveState=active" in status.stdout
    assert f"StatusText=ready: http://127.0.0.1:{port}" in status.stdout
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
    headers = {"Authorization": "Bearer test-token"}
    status_json = httpx.get(f"http://127.0.0.1:{port}/api/status", headers=headers, timeout=10)
    # The unit's hardening leaves bubblewrap what it needs: the agent's commands are confined.
    assert status_json.json()["sandbox"]["kind"] == "bubblewrap", status_json.json()["sandbox"]
    assert _systemctl(pid, "reload", "wakeful").returncode == 0
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
    assert _systemctl(pid, "stop", "wakeful").returncode == 0
    result = _systemctl(pid, "show", "wakeful", "-p", "Result", "-p", "ActiveState")
    assert "Result=success" in result.stdout and "ActiveState=inactive" in result.stdout
