"""Finding the config, the data directory and the secrets the same way in CLI and daemon."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wakeful.app.config import default_data_dir, find_config_file, load_settings
from wakeful.cli.main import _parser
from wakeful.kernel import config_base

WAKEFUL = str(Path(sys.executable).parent / "wakeful")
SUBCOMMANDS: dict[str, list[str]] = {
    "run": [],
    "init": [],
    "send": ["hello"],
    "status": [],
    "events": [],
    "trajectory": ["main"],
    "chat": [],
}


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_config_option_before_or_after_every_subcommand(command: str) -> None:
    """`wakeful -c F cmd` and `wakeful cmd -c F` (the units' form) mean the same."""
    rest = SUBCOMMANDS[command]
    before = _parser().parse_args(["-c", "a.toml", command, *rest])
    after = _parser().parse_args([command, "-c", "a.toml", *rest])
    long_after = _parser().parse_args([command, "--config=a.toml", *rest])
    assert before.config == after.config == long_after.config == "a.toml"
    assert _parser().parse_args([command, *rest]).config is None


def test_config_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-c, then $WAKEFUL_CONFIG, then ./wakeful.toml, then $XDG_CONFIG_HOME/wakeful/."""
    xdg = tmp_path / "xdg"
    (xdg / "wakeful").mkdir(parents=True)
    user_config = xdg / "wakeful" / "wakeful.toml"
    user_config.write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.delenv("WAKEFUL_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert find_config_file(None) == user_config
    (tmp_path / "wakeful.toml").write_text("")
    assert find_config_file(None) == Path("wakeful.toml")
    named = tmp_path / "named.toml"
    named.write_text("")
    monkeypatch.setenv("WAKEFUL_CONFIG", str(named))
    assert find_config_file(None) == named
    assert find_config_file(str(user_config)) == user_config
    with pytest.raises(config_base.ConfigError, match=r"missing\.toml \(-c\) does not exist"):
        find_config_file(str(tmp_path / "missing.toml"))


def test_default_data_dir_follows_the_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$STATE_DIRECTORY; else the user unit's ~/.local/state/wakeful; an old
    ~/.local/share/wakeful with data keeps being used."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("STATE_DIRECTORY", f"{tmp_path}/s1:{tmp_path}/s2")
    assert default_data_dir() == tmp_path / "s1"
    monkeypatch.delenv("STATE_DIRECTORY")
    assert default_data_dir() == tmp_path / ".local" / "state" / "wakeful"
    legacy = tmp_path / ".local" / "share" / "wakeful"
    legacy.mkdir(parents=True)
    (legacy / "wakeful.db").write_text("")
    assert default_data_dir() == legacy


def test_relative_secret_files_are_found_beside_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside systemd the CLI reads /etc/wakeful/credentials/NAME as the unit loads it."""
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    (tmp_path / "credentials").mkdir()
    (tmp_path / "credentials" / "admin-token").write_text("token-beside-config\n")
    config = tmp_path / "wakeful.toml"
    config.write_text('[server]\nadmin_token_file = "admin-token"\n')
    try:
        settings = load_settings(config)
        assert settings.server.client_admin_token(tmp_path / "data") == "token-beside-config"
    finally:
        config_base.set_config_dir(None)


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WAKEFUL_", "XDG_"))}
    env.pop("STATE_DIRECTORY", None)
    return {**env, "HOME": str(home)}


def test_a_client_command_creates_no_files(tmp_path: Path) -> None:
    """`wakeful status` before the daemon ever ran: one line, exit 1, nothing written."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**_clean_env(home), "WAKEFUL_DAEMON__DATA_DIR": str(home / "data")}
    result = subprocess.run(
        [WAKEFUL, "status"], env=env, cwd=home, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "is `wakeful run` running?" in result.stderr
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            '[llm]\nmodel = "m"\napi_key_file = "/nonexistent/key"\n',
            "llm.api_key_file: cannot read",
        ),
        ('[[hooks]]\nname = "gh"\nauth = "github"\n', "hooks 'gh': no secret configured"),
        ('[[hooks]]\nname = "gh"\nsecret_file = "/nonexistent/s"\n', "hooks 'gh'.secret_file"),
    ],
)
def test_start_up_errors_are_one_line_exit_2(tmp_path: Path, toml: str, expected: str) -> None:
    """A configuration the daemon cannot use: one line on stderr naming it, exit 2."""
    config = tmp_path / "wakeful.toml"
    config.write_text(f'[daemon]\ndata_dir = "{tmp_path / "data"}"\n' + toml)
    result = subprocess.run(
        [WAKEFUL, "run", "-c", str(config)],
        env={**_clean_env(tmp_path), "WAKEFUL_SERVER__BIND": "127.0.0.1:0"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("wakeful: cannot start: ") or result.stderr.startswith(
        "wakeful: configuration error: "
    )
    assert result.stderr.count("\n") == 1 and expected in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_version() -> None:
    """`wakeful --version` names the installed version."""
    result = subprocess.run([WAKEFUL, "--version"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert result.stdout.startswith("wakeful 0.") and result.stdout.count("\n") == 1


def test_a_bind_beyond_loopback_is_warned_about(tmp_path: Path) -> None:
    """Listening on 0.0.0.0 logs a warning that says how to stay local."""
    from tests.daemon_process import DaemonProcess, free_port, write_config

    port = free_port()
    config = write_config(tmp_path, None, port)
    config.write_text(config.read_text().replace("127.0.0.1:", "0.0.0.0:"))
    with DaemonProcess(config, port) as daemon:
        daemon.wait_for_log("listening beyond this machine")
        assert daemon.stop() == 0
    loopback = tmp_path / "loopback"
    with DaemonProcess(write_config(loopback, None, port), port) as daemon:
        assert daemon.stop() == 0
        assert not any("listening beyond" in line for line in daemon.lines)
