"""Combined idle cost (issue 14): three MCP servers, two subscriptions and the system checks,
next to the plain daemon, over one window.

Two `wakeful run` subprocesses with the fake model (as bench/idle_cost.py
starts them): the plain one (no MCP servers, no subscriptions, system checks
on), and one with three MCP servers connected (two over stdio, its children,
and one over streamable HTTP started here: bench/mcp_cost.py's catalog), the
system checks on with ``user_inactive_after`` armed, and two subscriptions the
model's answer to the first message makes (a file watch on the workspace, an
http_check every 60 s on a loopback page: bench/subscriptions_idle.py's).
Once /api/status shows both subscriptions watching, CPU, context switches of
all threads (wake-ups) and RSS are read from /proc over one window (default
130 s: two check intervals); the MCP server processes are on rows of their
own. Targets for the daemon: <= 0.1 % of a core, <= 120 MiB RSS.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import REPO_ROOT, FakeModelServer, print_table
from bench.idle_cost import (
    MEASURE_HEADER,
    SYSTEM_ON,
    Subject,
    free_port,
    stopped_at_exit,
    wake_once,
)
from bench.mcp_cost import catalog_stdio, children, measure_all, start_http_catalog
from bench.subscriptions_idle import Page
from tests.fakes.model_server import Reply, ToolCallSpec


def start(directory: Path, token: str, model_url: str, extra: str) -> tuple[Subject, str]:
    directory.mkdir()
    port = free_port()
    (directory / "wakeful.toml").write_text(
        f'[daemon]\ndata_dir = "{directory / "data"}"\nlog_level = "info"\n\n'
        f'[server]\nbind = "127.0.0.1:{port}"\nadmin_token = "{token}"\n\n'
        f'[llm]\nbase_url = "{model_url}"\nmodel = "fake-model"\napi_key = "unused"\n'
        "max_retries = 0\n\n" + SYSTEM_ON + "\n" + extra,
        encoding="utf-8",
    )
    log = (directory / "daemon.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "wakeful", "-c", str(directory / "wakeful.toml"), "run"],
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return Subject(directory.name, process), f"http://127.0.0.1:{port}"


def wait_until_watching(url: str, token: str, count: int) -> None:
    """Until /api/status lists ``count`` subscriptions whose watch has reported in."""
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + 30
    with httpx.Client(base_url=url, headers=headers, timeout=5) as client:
        while True:
            subs = client.get("/api/status").json().get("subscriptions", {})
            listed = subs.get("subscriptions", [])
            if len(listed) == count and all(s.get("detail") for s in listed):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"subscriptions not watching within 30 s: {listed}")
            time.sleep(0.1)


def main(seconds: float) -> None:
    token = secrets.token_urlsafe(24)
    page = Page()
    page.http.start()
    allow = f'[safety]\nhttp_allow = ["127.0.0.1:{page.http.port}"]\n\n'
    try:
        with FakeModelServer() as server, tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            http_process, http_url = start_http_catalog(tmp)
            try:
                plain, plain_url = start(tmp / "plain daemon", token, server.base_url, allow)
                three = (
                    catalog_stdio("files", 100, 0)
                    + catalog_stdio("more", 20, 100)
                    + f'[[mcp.servers]]\nname = "crm"\nurl = "{http_url}"\n'
                )
                with stopped_at_exit([plain]):
                    wake_once(plain_url, token, expect_reply=True)
                    server.push(
                        Reply(
                            tool_calls=[
                                ToolCallSpec("connect_channel", {"kind": "file", "path": "."}),
                                ToolCallSpec(
                                    "connect_channel",
                                    {"kind": "http_check", "url": page.url, "interval_s": 60},
                                ),
                            ]
                        ),
                        Reply(text="Subscribed."),
                    )
                    label = "3 MCP servers + 2 subscriptions + system checks"
                    full, full_url = start(tmp / label, token, server.base_url, allow + three)
                    with stopped_at_exit([full]):
                        wake_once(full_url, token, expect_reply=True)
                        wait_until_watching(full_url, token, 2)
                        servers = {
                            f"  MCP stdio server, pid {pid}": pid
                            for pid in children(full.process.pid)
                        }
                        servers["  MCP HTTP server (started by the bench)"] = http_process.pid
                        time.sleep(2)  # the first connections' and checks' work is over
                        hits_before = page.hits
                        rows = measure_all([plain, full], servers, seconds)
                        hits = page.hits - hits_before
            finally:
                http_process.kill()
                http_process.wait()
    finally:
        page.http.close()
    print(f"idle cost over {seconds:g} s, after one message (CPU % is of one core)")
    print_table(MEASURE_HEADER, rows)
    print(f"http_check requests in the window: {hits} (interval 60 s)")
    print("targets for the daemon: <= 0.1 % CPU, <= 120 MiB RSS")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=130.0, help="measuring window")
    main(parser.parse_args().seconds)
