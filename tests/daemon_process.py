"""Run `wakeful run` as a real child process, to kill it with SIGKILL."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from tests.daemon_harness import ADMIN_TOKEN
from tests.support.ports import free_port as free_port  # where the daemon tests look


def run_to_exit(config: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`wakeful run -c CONFIG` to its end (a start-up that must fail), output captured;
    ``env`` overrides variables (e.g. ``PATH``)."""
    return subprocess.run(
        [sys.executable, "-m", "wakeful", "-c", str(config), "run"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )


def write_config(
    data_dir: Path, model_url: str | None, port: int, *, log_level: str = "info"
) -> Path:
    lines = [
        "[daemon]",
        f'data_dir = "{data_dir}"',
        f'log_level = "{log_level}"',
        "[server]",
        f'bind = "127.0.0.1:{port}"',
        f'admin_token = "{ADMIN_TOKEN}"',
        "[llm]",
        "max_retries = 0",
        "[loop]",
        "stop_grace_s = 0.5",
        # Not the sandbox (tests/test_sandbox.py): its --die-with-parent would end the
        # orphans the restart tests need, and it hides the test's directory.
        "[safety]",
        'sandbox = "none"',
        # Resource alerts depend on the host (see tests/daemon_harness.py).
        "[system]",
        "enabled = false",
    ]
    if model_url:
        lines[lines.index("[llm]") + 1 : lines.index("[llm]") + 1] = [
            f'base_url = "{model_url}"',
            'model = "fake-model"',
        ]
    path = data_dir / "wakeful.toml"
    data_dir.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


class DaemonProcess:
    """A `wakeful run` child whose log lines are collected as they are written."""

    def __init__(
        self,
        config: Path,
        port: int,
        *,
        open_files: tuple[int, int] | None = None,
        module: str = "wakeful",
        env: dict[str, str] | None = None,
    ) -> None:
        self.config = config
        self.env = env  # the child's whole environment (default: this one's)
        self.module = module  # `python -m MODULE`: a test's wrapper may inject a fault
        self.open_files = open_files  # RLIMIT_NOFILE (soft, hard) for the child
        self.url = f"http://127.0.0.1:{port}"
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout_s: float = 20.0) -> DaemonProcess:
        env = {**(os.environ if self.env is None else self.env), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, "-c", str(self.config), "run"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            preexec_fn=self._limit_open_files if self.open_files else None,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for_log("wakeful is listening", timeout_s)
        return self

    def _limit_open_files(self) -> None:
        assert self.open_files is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, self.open_files)

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def records(self) -> list[dict[str, Any]]:
        with self._cond:
            return [json.loads(line) for line in self.lines if line.startswith("{")]

    def wait_for_log(self, text: str, timeout_s: float = 20.0, count: int = 1) -> None:
        def seen() -> bool:
            exited = self.proc is not None and self.proc.poll() is not None
            return exited or sum(text in line for line in self.lines) >= count

        with self._cond:
            if not self._cond.wait_for(seen, timeout_s):
                raise TimeoutError(f"no log line {text!r} after {timeout_s} s: {self.lines[-20:]}")
            if sum(text in line for line in self.lines) < count:
                raise RuntimeError(f"daemon exited before logging {text!r}: {self.lines[-20:]}")

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=10)

    def send(self, text: str, session: str = "main") -> str:
        with self.client() as client:
            response = client.post("/api/messages", json={"session": session, "text": text})
        assert response.status_code == 202, response.text
        event_id: str = response.json()["event_id"]
        return event_id

    def trajectory(self, session: str = "main") -> list[dict[str, Any]]:
        with self.client() as client:
            response = client.get(f"/api/sessions/{session}/trajectory")
        assert response.status_code == 200, response.text
        messages: list[dict[str, Any]] = response.json()["messages"]
        return messages

    def kill(self) -> None:
        """SIGKILL: no cleanup code of the daemon runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self, timeout_s: float = 10.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout_s)

    def __enter__(self) -> DaemonProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
