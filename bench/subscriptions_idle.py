"""Idle cost of subscriptions: a daemon with two (a file watch and an http_check) next to
one with none, over the same window.

Both are `wakeful run` subprocesses with the fake model, started and sent one
message as in bench/idle_cost.py; in the first, the model's answer to that
message is two connect_channel calls (a file watch on the workspace, an
http_check every 60 s on a loopback page allowed by [safety] http_allow).
Then, over one window (default 130 s: two check intervals), CPU, context
switches of all threads (wake-ups) and RSS are read from /proc, and the page's
hits are counted (the http_check's requests).
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from bench.common import REPO_ROOT, FakeModelServer, print_table
from bench.idle_cost import MEASURE_HEADER, Subject, free_port, measure, stopped_at_exit, wake_once
from tests.fakes.loopback_http import LoopbackHttpServer
from tests.fakes.model_server import Reply, ToolCallSpec


class Page:
    def __init__(self) -> None:
        self.hits = 0
        self._lock = threading.Lock()
        self.http = LoopbackHttpServer(Starlette(routes=[Route("/", self._page)]), "page")
        self.url = f"http://127.0.0.1:{self.http.port}/"

    async def _page(self, request: Request) -> Response:
        with self._lock:
            self.hits += 1
        return PlainTextResponse("ok")


def start(directory: Path, token: str, model_url: str, allow: str) -> tuple[Subject, str]:
    directory.mkdir()
    port = free_port()
    (directory / "wakeful.toml").write_text(
        f'[daemon]\ndata_dir = "{directory / "data"}"\nlog_level = "warning"\n\n'
        f'[server]\nbind = "127.0.0.1:{port}"\nadmin_token = "{token}"\n\n'
        f'[safety]\nhttp_allow = ["{allow}"]\n\n'
        f'[llm]\nbase_url = "{model_url}"\nmodel = "fake-model"\napi_key = "unused"\n',
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


def main(seconds: float) -> None:
    token = secrets.token_urlsafe(24)
    page = Page()
    page.http.start()
    allow = f"127.0.0.1:{page.http.port}"
    try:
        with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
            plain, plain_url = start(Path(tmp) / "no subscriptions", token, server.base_url, allow)
            subjects = [plain]
            with stopped_at_exit(subjects):
                wake_once(plain_url, token, expect_reply=True)
                calls = [
                    ToolCallSpec("connect_channel", {"kind": "file", "path": "."}),
                    ToolCallSpec(
                        "connect_channel",
                        {"kind": "http_check", "url": page.url, "interval_s": 60},
                    ),
                ]
                server.push(Reply(tool_calls=calls), Reply(text="Subscribed."))
                subs, subs_url = start(
                    Path(tmp) / "two subscriptions", token, server.base_url, allow
                )
                subjects.append(subs)
                wake_once(subs_url, token, expect_reply=True)
                hits_before = page.hits
                rows = measure(subjects, seconds)
                hits = page.hits - hits_before
    finally:
        page.http.close()
    print(f"idle cost over {seconds:g} s (CPU % is of one core)")
    print_table(MEASURE_HEADER, rows)
    print(f"http_check requests in the window: {hits} (interval 60 s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=130.0, help="measuring window")
    main(parser.parse_args().seconds)
