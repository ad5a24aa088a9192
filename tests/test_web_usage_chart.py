"""The web page's usage chart: tokens per day for the last 14 days, drawn from
``GET /api/usage?by=day&days=14`` as inline SVG, with the totals and — where
``[budget.prices]`` has the model — the dollars. On the real thing: a daemon (in a
thread) answering real model calls through the fake model server, a few calls of
earlier days recorded in its store, Debian's Chromium. Screenshots at desktop
(1280×800) and phone (390×844) sizes go to the test's directory."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.from_thread
import httpx
from anyio.from_thread import BlockingPortal
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import as_phone, chromium, find, wait_for
from tests.daemon_harness import daemon_settings
from tests.fakes.model_server import FakeModelServer, text_reply
from wakeful.app.lifespan import RunningDaemon, running_daemon
from wakeful.store.base import ModelCallRecord

PRICES = {"fake-model": {"input": 2.0, "output": 8.0}}  # US dollars per million tokens
DAY_S = 86400


@dataclass
class Daemon:
    running: RunningDaemon
    portal: BlockingPortal
    model: FakeModelServer

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        headers = {"Authorization": f"Bearer {self.running.admin_token}"}
        response = httpx.request(method, f"{self.running.url}{path}", headers=headers, json=body)
        assert response.status_code in (200, 202), response.text
        return response.json()

    def earlier_call(self, days_ago: int, tokens_in: int, tokens_out: int) -> None:
        """A model call of an earlier day, as the session loop records one."""
        record = ModelCallRecord(
            session="main",
            run_id=f"r-{days_ago}",
            model="fake-model",
            latency_s=0.5,
            prompt_tokens=tokens_in,
            completion_tokens=tokens_out,
            cached_tokens=0,
            finish_reason="stop",
            outcome="ok",
            source="user",
            created_at=time.time() - days_ago * DAY_S,
        )
        self.portal.call(self.running.daemon.store.record_model_call, record)

    def answered(self, text: str) -> None:
        calls = self.api("GET", "/api/usage?by=day&days=14")["total"]["calls"]
        self.model.push(text_reply(f"noted: {text}"))
        self.api("POST", "/api/messages", {"session": "main", "text": text})
        wait_for(
            lambda: self.api("GET", "/api/usage?by=day&days=14")["total"]["calls"] > calls,
            what="the model call recorded",
        )


@contextmanager
def running(tmp_path: Path, model: FakeModelServer, **sections: Any) -> Iterator[Daemon]:
    settings = daemon_settings(tmp_path / "data", model.base_url, **sections)
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(running_daemon(settings)) as daemon,
    ):
        yield Daemon(daemon, portal, model)


def open_page(driver: WebDriver, daemon: Daemon) -> None:
    driver.get(f"{daemon.running.url}/login?token={daemon.running.admin_token}")
    wait_for(lambda: find(driver, "#connection").text == "live", what="the live feed")


def bars(driver: WebDriver) -> list[tuple[str, int, int]]:
    return [
        (g.get_attribute("data-day") or "", int(g.get_attribute("data-in") or -1),
         int(g.get_attribute("data-out") or -1))
        for g in driver.find_elements("css selector", "#usage svg g.day")
    ]  # fmt: skip


def totals_text(driver: WebDriver) -> str:
    found = driver.find_elements("css selector", "#usage-totals")
    return str(found[0].text) if found else ""


def expected_totals(report: dict[str, Any], priced: bool) -> str:
    rows = report["rows"]
    calls = sum(r["calls"] for r in rows)
    tokens_in = sum(r["tokens_in"] for r in rows)
    tokens_out = sum(r["tokens_out"] for r in rows)
    text = f"{calls:,} calls · {tokens_in:,} tokens in · {tokens_out:,} out"
    if priced:
        cost = sum(r["cost_usd"] for r in rows)
        text += f" · ${cost:.4f}" if cost < 1 else f" · ${cost:.2f}"
    return text


def test_the_chart_shows_what_the_api_counts_at_both_sizes(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    with (
        chromium(tmp_path / "browser", height=800) as driver,
        running(tmp_path, model_server, budget={"prices": PRICES}) as daemon,
    ):
        daemon.earlier_call(3, 1_200_000, 40_000)
        daemon.earlier_call(9, 450_000, 90_000)
        daemon.earlier_call(20, 999, 999)  # older than 14 days: not drawn
        open_page(driver, daemon)
        daemon.answered("hello")  # while the page is open: the chart follows
        daemon.answered("and once more")
        report = daemon.api("GET", "/api/usage?by=day&days=14")
        assert len(report["rows"]) == 3  # today, 3 and 9 days ago
        want = expected_totals(report, priced=True)
        wait_for(lambda: totals_text(driver) == want, what=f"the totals {want!r}")
        drawn = bars(driver)
        assert len(drawn) == 14 and drawn == sorted(drawn)  # oldest day first
        by_day = {r["key"]: (r["tokens_in"], r["tokens_out"]) for r in report["rows"]}
        assert {day: (i, o) for day, i, o in drawn if i or o} == by_day
        assert drawn[-1][0] == max(by_day)  # today is the last bar
        # Taller bars for more tokens: the 3-days-ago bar is the tallest.
        heights = {
            g.get_attribute("data-day"): g.find_element("css selector", "rect.in").size
            for g in driver.find_elements("css selector", "#usage svg g.day")
        }
        three_ago = sorted(by_day)[-2]
        tallest = max(size["height"] for size in heights.values())
        assert heights[three_ago]["height"] == tallest > 0
        section = find(driver, "#usage")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", section)
        driver.save_screenshot(str(tmp_path / "usage-desktop.png"))
        chart = find(driver, "#usage svg")
        assert 250 <= chart.size["width"] <= 700, chart.size
        as_phone(driver)
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", section)
        wait_for(lambda: find(driver, "#usage svg").size["width"] < 390, what="phone size")
        assert find(driver, "#usage svg").size["width"] >= 300  # the column's full width
        driver.save_screenshot(str(tmp_path / "usage-phone.png"))


def test_without_prices_the_chart_shows_tokens_and_no_dollars(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The defaults: no [budget.prices], so tokens and calls, no made-up dollars."""
    with (
        chromium(tmp_path / "browser", height=800) as driver,
        running(tmp_path, model_server) as daemon,
    ):
        daemon.answered("hello")
        open_page(driver, daemon)
        report = daemon.api("GET", "/api/usage?by=day&days=14")
        assert report["total"]["cost_usd"] is None
        want = expected_totals(report, priced=False)
        wait_for(lambda: totals_text(driver) == want, what=f"the totals {want!r}")
        assert "$" not in find(driver, "#usage").text
        assert "no price set" in find(driver, "#usage .legend").text
