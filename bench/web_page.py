"""The web page: time to first paint, bytes transferred, and the daemon's idle CPU with a page open.

Two `wakeful run` daemons (subprocesses, each with the fake model, each sent
one message and answered). A headless Chromium (Debian's, via Selenium) logs
in to the first, then loads ``/`` ``--loads`` times with its cache disabled:
first paint and first contentful paint from the Paint Timing API, and the
bytes on the wire (``transferSize``: compressed bodies plus headers) of ``/``
and everything it loads; the gzip-compressed bodies are also read directly
(Content-Length with ``Accept-Encoding: gzip``). Baseline in the same run:
the same browser painting a one-line HTML page from Python's ``http.server``.

Then, with the page left open on the first daemon (its one SSE connection
live) and none on the second, both daemons' CPU over one window (default
60 s), next to a bare ``python -c "time.sleep()"``.
"""

from __future__ import annotations

import argparse
import http.server
import re
import secrets
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.common import REPO_ROOT, FakeModelServer, print_table
from bench.idle_cost import (
    MEASURE_HEADER,
    measure,
    start_baseline,
    start_daemon,
    stopped_at_exit,
    wake_once,
)
from tests.browser import chromium, find, wait_for

# Files the page loads (its API calls and live feed are not "the page").
PAINT_JS = """
const paints = Object.fromEntries(
  performance.getEntriesByType('paint').map(p => [p.name, p.startTime]));
const nav = performance.getEntriesByType('navigation')[0];
const resources = performance.getEntriesByType('resource').filter(r =>
  new URL(r.name).origin === location.origin && !/[/](web|api)[/]/.test(r.name));
return {paints, bytes: nav.transferSize + resources.reduce((n, r) => n + r.transferSize, 0),
        files: 1 + resources.length};
"""


class OneLine(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>baseline</title><p>hello</p>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def baseline_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OneLine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def paint_times(driver: Any, url: str, loads: int, wait_live: bool) -> list[dict[str, Any]]:
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    results = []
    for _ in range(loads):
        driver.get(url)
        if wait_live:
            wait_for(lambda: find(driver, "#connection").text == "live", what="the live feed")
        wait_for(lambda: driver.execute_script(PAINT_JS)["paints"].get("first-contentful-paint"))
        results.append(driver.execute_script(PAINT_JS))
    return results


def gzip_bytes(url: str, token: str) -> tuple[int, list[str]]:
    """Compressed body bytes of ``/`` and what it references, read directly."""
    with httpx.Client(base_url=url, headers={"Accept-Encoding": "gzip"}) as client:
        login = client.get("/login", params={"token": token})
        cookie = login.cookies["wakeful_session"]
        client.cookies.clear()
        headers = {"Cookie": f"wakeful_session={cookie}"}
        page = client.get("/", headers=headers)
        paths = ["/", *re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)]
        sizes = [int(client.get(p, headers=headers).headers["content-length"]) for p in paths]
    return sum(sizes), [f"{p} {s} B" for p, s in zip(paths, sizes, strict=True)]


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f})"


def main(seconds: float, loads: int) -> None:
    token = secrets.token_urlsafe(24)
    with FakeModelServer() as server, tempfile.TemporaryDirectory(dir=REPO_ROOT) as tmp:
        open_daemon, open_url = start_daemon(Path(tmp) / "page", token, server.base_url)
        open_daemon.name = "wakeful run, one page open"
        idle_daemon, idle_url = start_daemon(Path(tmp) / "none", token, server.base_url)
        idle_daemon.name = "wakeful run, no page open"
        sleep = f"import time; time.sleep({seconds + 300})"
        sleeper = start_baseline("baseline: python time.sleep", sleep)
        subjects = [open_daemon, idle_daemon, sleeper]
        with stopped_at_exit(subjects), chromium(Path(tmp)) as driver, baseline_server() as plain:
            wake_once(open_url, token, expect_reply=True)
            wake_once(idle_url, token, expect_reply=True)
            base = paint_times(driver, plain, loads, wait_live=False)
            driver.get(f"{open_url}/login?token={token}")
            page = paint_times(driver, f"{open_url}/", loads, wait_live=True)
            compressed, files = gzip_bytes(open_url, token)
            # The page stays open (its SSE connection live) through the window.
            time.sleep(2)
            rows = measure(subjects, seconds)
            still_live = find(driver, "#connection").text == "live"
    print(f"web page: {loads} cold loads each (browser cache disabled)")
    print_table(
        ["page", "first paint", "first contentful paint", "transferred", "files"],
        [
            [
                name,
                summary([r["paints"].get("first-paint", 0) for r in results]),
                summary([r["paints"]["first-contentful-paint"] for r in results]),
                f"{results[-1]['bytes']} B",
                str(results[-1]["files"]),
            ]
            for name, results in (("wakeful /", page), ("baseline: one-line HTML", base))
        ],
    )
    listing = ", ".join(files)
    print(f"gzip bodies of / and all it loads: {compressed} B ({listing}); target < 100 KB")
    print(f"\nidle CPU over {seconds:g} s (CPU % is of one core; target ≤ 0.1 % with a page open)")
    print_table(MEASURE_HEADER, rows)
    print(f"the page's feed was still live at the end: {still_live}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="idle measuring window")
    parser.add_argument("--loads", type=int, default=5, help="cold page loads to time")
    args = parser.parse_args()
    main(args.seconds, args.loads)
