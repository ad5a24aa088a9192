"""The shipped systemd units pass systemd's own checks; the example config loads."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wakeful.app.config import load_settings

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
WAKEFUL_BIN = Path(sys.executable).parent / "wakeful"

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze missing: scripts/check.sh installs Debian's systemd package",
)


def _analyze(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_system_unit_security_exposure() -> None:
    """`systemd-analyze security --offline=yes --threshold=20` passes: exposure ≤ 2.0."""
    result = _analyze(
        "security", "--offline=yes", "--threshold=20", str(DEPLOY / "wakeful.service")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    exposure = re.search(r"Overall exposure level for wakeful.service: ([0-9.]+)", result.stdout)
    assert exposure is not None and float(exposure.group(1)) <= 2.0


def test_system_unit_verifies(tmp_path: Path) -> None:
    """`systemd-analyze verify` is clean (ExecStart pointed at this checkout's wakeful)."""
    text = (DEPLOY / "wakeful.service").read_text()
    assert "ExecStart=/opt/wakeful/bin/wakeful run" in text
    unit = tmp_path / "wakeful.service"
    unit.write_text(text.replace("/opt/wakeful/bin/wakeful", str(WAKEFUL_BIN)))
    result = _analyze("verify", str(unit))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    for needed in ("Type=notify", "WatchdogSec=", "Restart=on-failure", "StateDirectory=wakeful"):
        assert needed in text
    assert "DynamicUser=yes" in text and "LoadCredential=admin-token:" in text


def test_user_unit_verifies(tmp_path: Path) -> None:
    """The user-level unit verifies under a user manager (a scratch HOME and runtime dir)."""
    home, runtime = tmp_path / "home", tmp_path / "run"
    venv_bin = home / ".local/share/wakeful-venv/bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "wakeful").symlink_to(WAKEFUL_BIN)
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    result = _analyze("--user", "verify", str(DEPLOY / "user" / "wakeful.service"), env=env)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_example_config_reads_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """deploy/wakeful.toml loads; its relative *_file names resolve in $CREDENTIALS_DIRECTORY."""
    (tmp_path / "admin-token").write_text("admin-secret-from-credential\n")
    (tmp_path / "openai-api-key").write_text("sk-from-credential\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    settings = load_settings(DEPLOY / "wakeful.toml")
    assert settings.server.resolve_admin_token(tmp_path) == "admin-secret-from-credential"
    assert settings.llm.resolve_api_key() == "sk-from-credential"
