"""`wakeful open`: the log-in link, and a browser only where one can be seen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from tests.daemon_harness import ADMIN_TOKEN, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer
from wakeful.cli.main import main
from wakeful.cli.open import has_display

pytestmark = pytest.mark.anyio


def wakeful_open(config: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY"}}
    return subprocess.run(
        [sys.executable, "-m", "wakeful", "-c", str(config), "open"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )


async def test_open_prints_a_link_that_logs_the_page_in(
    tmp_path: Path, model_server: FakeModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        config = tmp_path / "client.toml"
        host_port = h.running.url.removeprefix("http://")
        config.write_text(
            f'[daemon]\ndata_dir = "{tmp_path}"\n'
            f'[server]\nbind = "{host_port}"\nadmin_token = "{ADMIN_TOKEN}"\n'
        )
        # In a thread: the command's own request to the daemon must not block its loop.
        capsys.readouterr()  # the daemon's start-up line
        code = await anyio.to_thread.run_sync(main, ["-c", str(config), "open", "--no-browser"])
        assert code == 0
        printed = capsys.readouterr().out.splitlines()
        [url] = [line for line in printed if "/login?" in line]  # the daemon may log meanwhile
        # A one-time code, never the admin token: the link stays in the browser's history.
        assert url.startswith(f"{h.running.url}/login?code=") and ADMIN_TOKEN not in url
        async with httpx.AsyncClient() as browser:
            response = await browser.get(url)
            again = await browser.get(url)  # the same link a second time (history, a copy)
        assert response.status_code == 303 and "wakeful_session=" in response.headers["set-cookie"]
        assert again.status_code == 401 and "used already" in again.text
        assert "set-cookie" not in again.headers


def test_open_without_a_daemon_token_says_so_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "wakeful.toml"
    config.write_text(f'[daemon]\ndata_dir = "{tmp_path}"\n')
    done = wakeful_open(config)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "is `wakeful run` running?" in done.stderr


def test_open_with_no_daemon_running_says_so_in_one_line(tmp_path: Path) -> None:
    """The link is made by the running daemon now: without one, one line saying so."""
    from tests.daemon_process import free_port

    config = tmp_path / "wakeful.toml"
    config.write_text(
        f'[daemon]\ndata_dir = "{tmp_path}"\n'
        f'[server]\nbind = "127.0.0.1:{free_port()}"\nadmin_token = "{ADMIN_TOKEN}"\n'
    )
    done = wakeful_open(config)
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and "start the daemon with `wakeful run`" in done.stderr


def test_a_browser_is_started_only_where_one_can_be_seen() -> None:
    assert has_display({"DISPLAY": ":0"}, "linux")
    assert has_display({"WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert not has_display({}, "linux")  # a server, an SSH session without X forwarding
    assert not has_display({"DISPLAY": ":0", "CI": "true"}, "linux")
    assert has_display({}, "darwin")
    assert not has_display({"SSH_CONNECTION": "10.0.0.2 5 10.0.0.1 22"}, "darwin")
