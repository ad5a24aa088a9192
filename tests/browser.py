"""A real headless Chromium (Debian's chromium + chromedriver) driven by Selenium.

No browser is downloaded: both binaries are the system's, passed explicitly so
Selenium Manager never looks for others. Every browser gets a fresh profile.
"""

from __future__ import annotations

import os
import shutil
import tempfile
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
