"""A real headless Chromium (Debian's chromium + chromedriver) driven by Selenium.

No browser is downloaded: both binaries are the system's, passed explicitly so
Selenium Manager never looks for others. Every browser gets a fresh profile.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
T = TypeVar("T")


@contextmanager
def chromium(work_dir: Path, *, width: int = 1280, height: int = 860) -> Iterator[WebDriver]:
    work_dir.mkdir(parents=True, exist_ok=True)  # a fresh clone has no screenshot folder yet
    profile = Path(tempfile.mkdtemp(prefix="chromium-", dir=work_dir))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    # Selenium Manager must not fetch anything: the driver path is given.
    os.environ.setdefault("SE_AVOID_STATS", "true")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def as_phone(driver: WebDriver, width: int = 390, height: int = 844) -> None:
    """Lay the page out as a phone would: headless Chromium keeps its window at least
    500 px wide, so the viewport is set through the DevTools protocol instead."""
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)  # type: ignore[attr-defined]


def wait_for(condition: Callable[[], T | None], timeout_s: float = 10.0, what: str = "") -> T:
    """Poll ``condition`` (a page state, read with the driver) until it is truthy."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # the element may be re-rendered between reads
            last_error = exc
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what or condition}: {last_error}")


def texts(driver: WebDriver, css: str) -> list[str]:
    return [str(e.text) for e in driver.find_elements("css selector", css)]


def find(driver: WebDriver, css: str) -> WebElement:
    return driver.find_element("css selector", css)


class CuttableProxy:
    """A loopback TCP proxy whose connections a test can cut (and keep refusing) at will.

    It stands between the browser and the daemon, so "the connection dropped" is
    a real dropped TCP connection, and it keeps each connection's request bytes
    so a test can see what the browser sent when it came back.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.requests: list[bytearray] = []
        self._accepting = threading.Event()
        self._accepting.set()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut(self) -> None:
        """Drop every open connection; refuse new ones until :meth:`restore`."""
        self._accepting.clear()
        with self._lock:
            for sock in self._open:
                _close(sock)
            self._open.clear()

    def restore(self) -> None:
        self._accepting.set()

    def close(self) -> None:
        self._closed = True
        self.cut()
        self._server.close()

    def sent(self, needle: bytes) -> list[bytes]:
        """Request bytes (per connection) that contain ``needle``, case-insensitively."""
        with self._lock:
            return [bytes(r) for r in self.requests if needle.lower() in bytes(r).lower()]

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self._accepting.is_set():
                _close(client)  # a network error to the browser: it tries again later
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            request = bytearray()
            with self._lock:
                self._open += [client, upstream]
                self.requests.append(request)
            for args in ((client, upstream, request), (upstream, client, None)):
                threading.Thread(target=self._pump, args=args, daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, log: bytearray | None) -> None:
        try:
            while data := source.recv(65536):
                if log is not None:
                    with self._lock:
                        log += data
                sink.sendall(data)
        except OSError:
            pass
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
