"""Idle cost: CPU and memory of a `wakeful run` daemon that has nothing to do.

Three daemons run as subprocesses (`python -m wakeful -c CONFIG run`, the same
entry point as the `wakeful` command): one with a model (the fake server, in a
thread of this process) and its system checks on (the defaults, plus
``user_inactive_after`` armed), the same with ``[system] enabled = false``,
and one with no model configured. Each is started, waited
for on /healthz, sent one message (the one with a model must also have
answered it: an assistant message in its trajectory); then, over one shared
window (default 60 s), CPU seconds come from /proc/PID/stat (utime + stime),
wakeups from the context switches of all its threads, and RSS (VmRSS) is read
at the end.

Baselines, measured in the same window: a bare
`python -c "import time; time.sleep(...)"`, and a process that imports the
daemon's dependencies and sits in an idle asyncio loop.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.common import (
    REPO_ROOT,
    FakeModelServer,
    print_table,
    proc_context_switches,
    proc_cpu_seconds,
    proc_rss_mib,
)

DEPS = "anyio, httpx, openai, pydantic, pydantic_settings, starlette, structlog, uvicorn"


@dataclass
class Subject:
    name: str
    process: subprocess.Popen[bytes]
    cpu_start: float = 0.0
    switches_start: int = 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


SYSTEM_ON = '[system]\nuser_inactive_after = "8h"\n'
SYSTEM_OFF = "[system]\nenabled = false\n"


def write_config(
    directory: Path, token: str, model_url: str | None, extra: str = ""
) -> tuple[Path, str]:
    port = free_port()
    llm = f'base_url = "{model_url}"\nmodel = "fake-model"\napi_key = "unused"\nmax_retries = 0\n'
    text = (
        f'[daemon]\ndata_dir = "{directory / "data"}"\nlog_level = "info"\n\n'
        f'[server]\nbind = "127.0.0.1:{port}"\nadmin_token = "{token}"\n\n'
        + (f"[llm]\n{llm}\n" if model_url else "")
        + extra
    )
    path = directory / "wakeful.toml"
    path.write_text(text, encoding="utf-8")
    return path, f"http://127.0.0.1:{port}"


def start_daemon(
    directory: Path, token: str, model_url: str | None, name: str = "", extra: str = ""
) -> tuple[Subject, str]:
    directory.mkdir()
    config, url = write_config(directory, token, model_url, extra)
    log = (directory / "daemon.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "wakeful", "-c", str(config), "run"],
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    name = name or ("wakeful run, with model" if model_url else "wakeful run, no model")
    return Subject(name, process), url


def wake_once(url: str, token: str, expect_reply: bool) -> None:
    """Wait for /healthz, send one message and, with a model, wait for its answer."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=5) as client:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.TransportError):
                if client.get("/healthz").status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}/healthz did not answer within 30 s")
            time.sleep(0.05)
        response = client.post("/api/messages", json={"session": "main", "text": "hello"})
        response.raise_for_status()
        while expect_reply:
            messages = client.get("/api/sessions/main/trajectory").json()["messages"]
            if any(m["role"] == "assistant" for m in messages):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the daemon did not answer within 30 s")
            time.sleep(0.05)


def start_baseline(name: str, code: str) -> Subject:
    return Subject(name, subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT))


@contextlib.contextmanager
def stopped_at_exit(subjects: list[Subject]) -> Iterator[None]:
    try:
        yield
    finally:
        for subject in subjects:
            if subject.process.poll() is None:
                subject.process.send_signal(signal.SIGTERM)
        for subject in subjects:
            try:
                subject.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                subject.process.kill()
                subject.process.wait()


MEASURE_HEADER = ["process", "CPU s", "CPU %", "ctx switches", "ctx switches/s", "RSS MiB"]


def measure(subjects: list[Subject], seconds: float) -> list[list[str]]:
    """One row per subject, under MEASURE_HEADER."""
    for subject in subjects:
        subject.cpu_start = proc_cpu_seconds(subject.process.pid)
        subject.switches_start = proc_context_switches(subject.process.pid)
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    rows = []
    for subject in subjects:
        pid = subject.process.pid
        if subject.process.poll() is not None:
            rows.append([subject.name, "exited", "", "", "", ""])
            continue
        cpu = proc_cpu_seconds(pid) - subject.cpu_start
        switches = proc_context_switches(pid) - subject.switches_start
        rss = proc_rss_mib(pid)
        rows.append(
            [
                subject.name,
                f"{cpu:.2f}",
                f"{100 * cpu / elapsed:.3f}",
                # The total too: a wake-up a minute is 0.0 per second at one decimal.
                str(switches),
                f"{switches / elapsed:.2f}",
                f"{rss:.1f}",
            ]
        )
    return rows


def main(seconds: float) -> None:
    token = secrets.token_urlsafe(24)
    linger = seconds + 120
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        tmp_dir, url = Path(tmp), server.base_url
        with_model, url_model = start_daemon(
            tmp_dir / "model", token, url, "wakeful run, model, system checks on", SYSTEM_ON
        )
        checks_off, url_off = start_daemon(
            tmp_dir / "off", token, url, "wakeful run, model, system checks off", SYSTEM_OFF
        )
        no_model, url_none = start_daemon(tmp_dir / "none", token, None, "wakeful run, no model")
        subjects = [
            with_model,
            checks_off,
            no_model,
            start_baseline("baseline: python time.sleep", f"import time; time.sleep({linger})"),
            start_baseline(
                "baseline: deps imported, idle asyncio",
                f"import asyncio, {DEPS}; asyncio.run(asyncio.sleep({linger}))",
            ),
        ]
        with stopped_at_exit(subjects):
            wake_once(url_model, token, expect_reply=True)
            wake_once(url_off, token, expect_reply=True)
            wake_once(url_none, token, expect_reply=False)
            time.sleep(1)  # the baselines' imports are done by now
            rows = measure(subjects, seconds)
    print(f"idle cost over {seconds:g} s, after one message (CPU % is of one core)")
    print_table(MEASURE_HEADER, rows)
    print(f"model requests served by the fake server: {len(server.requests)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measuring window")
    main(parser.parse_args().seconds)
