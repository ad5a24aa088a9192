"""The shipped system unit under a real systemd: start (READY), reload, stop.

This machine has no systemd as PID 1, but systemd runs as PID 1 of a PID and mount
namespace of the test's own. The unit is the shipped file unchanged (its ExecStart=
runs /opt/wakeful/bin/wakeful with /etc/wakeful/wakeful.toml, as written), plus one
drop-in: ``LoadCredential=`` is reset, because this sandbox's kernel refuses the
credentials mount ("Failed to set up credentials: Protocol error"); the secrets come in
as environment overrides instead. Debian's python3 builds the venv, because
``ProtectHome=yes`` (rightly) hides a Python that lives under /root.

Nothing of the host's changes: inside the namespace /etc and /opt are overlays whose
writes land in the test's temporary root (so /etc/wakeful and /opt/wakeful are the
test's own), /var is a directory of that root (``StateDirectory=`` lands there, never in
the host's /var/lib/wakeful) and /run, /tmp are fresh tmpfs. The test plants a canary
/var/lib/wakeful on the host, held by a live daemon's lock, and checks it is untouched.

It takes about a minute (a venv install and a whole service manager). The target it
boots has ``DefaultDependencies=no`` and the tmpfiles units are masked: they have
nothing of the test's to set up.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.daemon_process import free_port
from tests.host_state import changes, content, shape
from wakeful.kernel.data_dir_lock import hold_data_dir_lock

ROOT = Path(__file__).resolve().parent.parent
SYSTEMD = Path("/lib/systemd/systemd")
DEBIAN_PYTHON = Path("/usr/bin/python3")
HOST_STATE = Path("/var/lib/wakeful")
HOST_PRIVATE = Path("/var/lib/private")

TMPFILES_UNITS = (
    "systemd-tmpfiles-setup.service",
    "systemd-tmpfiles-setup-dev.service",
    "systemd-tmpfiles-setup-dev-early.service",
    "systemd-tmpfiles-clean.service",
    "systemd-tmpfiles-clean.timer",
)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    # Only root (systemd, the install) walks down to it: DynamicUser='s fresh uid reads
    # it through the namespace's /opt/wakeful and /etc/wakeful, so those must be a+rX.
    root = tmp_path / "root"
    for name in ("etc-upper/wakeful", "etc-work", "opt-upper", "opt-work", "etc-wakeful", "units"):
        (root / name).mkdir(parents=True)  # etc-upper/wakeful: /etc/wakeful's mount point
    var = root / "var"
    for name in ("lib", "log", "cache", "spool"):
        (var / name).mkdir(parents=True)
    (var / "tmp").mkdir(mode=0o1777)
    (var / "tmp").chmod(0o1777)
    (var / "run").symlink_to("/run")
    (var / "lock").symlink_to("/run/lock")
    return root


def _overlays(scratch: Path) -> str:
    """Shell lines: /etc and /opt as overlays whose writes go to the scratch root."""
    return "".join(
        f"mount -t overlay overlay -o lowerdir=/{d},upperdir={scratch}/{d}-upper,"
        f"workdir={scratch}/{d}-work /{d}\n"
        for d in ("etc", "opt")
    )


def _install(scratch: Path) -> None:
    """The venv at /opt/wakeful as the unit expects it, written to the scratch root."""
    venv = "/opt/wakeful"
    script = _overlays(scratch) + (
        f"{DEBIAN_PYTHON} -m venv {venv}\n{venv}/bin/pip install -q {shlex.quote(str(ROOT))}\n"
    )
    # pip's cache and build directories too stay in the scratch root.
    env = {**os.environ, "PIP_CACHE_DIR": str(scratch / "pip-cache"), "TMPDIR": str(scratch)}
    namespace = ["unshare", "--mount", "--propagation", "private", "sh", "-ec", script]
    subprocess.run(namespace, env=env, check=True, timeout=420)


def _units(scratch: Path, port: int) -> Path:
    units = scratch / "units"
    (units / "wakeful.service.d").mkdir()
    etc = scratch / "etc-wakeful"
    shutil.copy(ROOT / "deploy" / "wakeful.toml", etc)
    shutil.copy(ROOT / "deploy" / "wakeful.env", etc)
    shutil.copy(ROOT / "deploy" / "wakeful.service", units)
    (units / "wakeful.service.d" / "no-credentials.conf").write_text(
        "[Service]\nLoadCredential=\n"
        "Environment=WAKEFUL_SERVER__ADMIN_TOKEN=test-token WAKEFUL_LLM__API_KEY=sk-test "
        f"WAKEFUL_SERVER__BIND=127.0.0.1:{port}\n"
    )
    (units / "wakeful-test.target").write_text(
        "[Unit]\nDescription=only what the test starts\nDefaultDependencies=no\n"
    )
    for unit in TMPFILES_UNITS:  # masked: nothing of the test's for them to set up
        (units / unit).symlink_to("/dev/null")
    subprocess.run(["chmod", "-R", "a+rX", str(scratch)], check=True)
    return units


@dataclass
class Canary:
    """A host /var/lib/wakeful (planted, or the user's real one) and what it must stay."""

    planted: bool
    shape: dict[str, tuple[str, int, int, int, str] | None]
    content: dict[str, bytes]

    def assert_untouched(self) -> None:
        assert changes(self.shape, shape((HOST_STATE, HOST_PRIVATE / "wakeful"))) == []
        if self.planted:
            assert content(HOST_STATE) == self.content


@pytest.fixture
def host_canary() -> Iterator[Canary]:
    """A canary /var/lib/wakeful with a running daemon's lock held on it, planted only
    where the host has none (and removed after); a real one is only looked at."""
    if os.path.lexists(HOST_STATE) or os.path.lexists(HOST_PRIVATE / "wakeful"):
        roots = (HOST_STATE, HOST_PRIVATE / "wakeful")
        yield Canary(planted=False, shape=shape(roots), content={})
        return
    private_existed = HOST_PRIVATE.exists()
    HOST_STATE.mkdir(mode=0o700)
    try:
        (HOST_STATE / "wakeful.db").write_bytes(b"canary: the user's data\n")
        (HOST_STATE / "wakeful.db").chmod(0o600)
        with hold_data_dir_lock(HOST_STATE):  # the user's daemon, running
            roots = (HOST_STATE, HOST_PRIVATE / "wakeful")
            yield Canary(planted=True, shape=shape(roots), content=content(HOST_STATE))
    finally:
        # What the unit did to it before the fix: moved it to /var/lib/private and left
        # a symlink behind. Whatever happened, nothing of the canary stays.
        if HOST_STATE.is_symlink():
            HOST_STATE.unlink()
        shutil.rmtree(HOST_STATE, ignore_errors=True)
        shutil.rmtree(HOST_PRIVATE / "wakeful", ignore_errors=True)
        if not private_existed and HOST_PRIVATE.exists():
            shutil.rmtree(HOST_PRIVATE, ignore_errors=True)


@pytest.fixture
def systemd(host_canary: Canary, scratch: Path) -> Iterator[tuple[Path, int, int]]:
    port = free_port()
    _install(scratch)
    units = _units(scratch, port)
    # Everything systemd and the service write lands in the scratch root or a tmpfs.
    boot = _overlays(scratch) + (
        f"mount --bind {scratch}/etc-wakeful /etc/wakeful\n"
        f"mount --bind {units} /etc/systemd/system\n"
        f"mount --bind {scratch}/var /var\n"
        "mount -t tmpfs tmpfs /run\nmount -t tmpfs tmpfs /tmp\n"
        f"exec {SYSTEMD} --system --unit=wakeful-test.target\n"
    )
    namespace = [
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        "--mount",
        "--propagation",
        "private",
    ]
    manager = subprocess.Popen(
        [*namespace, "sh", "-ec", boot],
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
    host_canary: Canary, systemd: tuple[Path, int, int]
) -> None:
    scratch, pid, port = systemd
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
    # StateDirectory= landed in the test's root; the host's /var/lib/wakeful is as it was.
    assert (scratch / "var" / "lib" / "private" / "wakeful" / "wakeful.db").is_file()
    # CacheDirectory= too: the code start-up compiled, where the read-only /opt cannot hold it.
    assert list((scratch / "var" / "cache" / "private" / "wakeful").glob("codegen-daemon.*"))
    host_canary.assert_untouched()
