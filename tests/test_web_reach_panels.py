"""The page shows what issue 14 added: open system alerts and the agent's subscriptions.

A real daemon in a thread (as tests/test_web_panels.py runs it) with its system
component on and its host checks off (a nearly full disk on some runner must
not decide the test); alerts are raised and resolved through the component's
own AlertBook, the one place they are, so they arrive as the real
``system.alert`` events in the ``ops`` session while the page shows ``main``.
The subscription is the model's own connect_channel call, and a file written
into the workspace fires it. Screenshots go to ``.pt-web/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio.from_thread
import pytest
from selenium.webdriver.common.keys import Keys

from tests.browser import as_phone, chromium, find, texts, wait_for
from tests.chat_loopback import LoopbackChat
from tests.daemon_harness import daemon_settings
from tests.fakes.model_replies import Reply, ToolCallSpec, text_reply
from tests.fakes.model_server import FakeModelServer
from tests.test_web_panels import SHOTS, Daemon, open_page, visible
from wakeful.app.components import default_components
from wakeful.app.lifespan import running_daemon
from wakeful.sources.system.component import SystemComponent

HOST_CHECKS_OFF = {
    "enabled": True,
    "session": "ops",
    "disk_free_min_mb": None,
    "disk_free_min_percent": None,
    "rss_max_mb": None,
    "mem_available_min_mb": None,
    "memory_psi_stall_ms": None,
    "pending_age_max_s": None,
}


@pytest.fixture
def daemon(
    tmp_path: Path, model_server: FakeModelServer
) -> Iterator[tuple[Daemon, SystemComponent]]:
    settings = daemon_settings(
        tmp_path, model_server.base_url, system=HOST_CHECKS_OFF, subscriptions={"debounce_ms": 100}
    )
    chat = LoopbackChat({"1"})
    components = [*default_components(settings), chat]
    (system,) = [c for c in components if isinstance(c, SystemComponent)]
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(running_daemon(settings, components)) as running,
    ):
        yield Daemon(running, chat, portal, model_server, tmp_path), system
    assert not model_server._queue, "a scripted reply was left over"


def test_open_system_alerts_show_on_every_session_and_leave_when_resolved(
    daemon: tuple[Daemon, SystemComponent],
) -> None:
    d, system = daemon
    book = system.book
    with chromium(SHOTS) as driver:
        as_phone(driver)
        open_page(driver, d)
        assert not visible(driver, "#system-banner")
        d.model.push(text_reply("the disk, noted"))
        d.portal.call(book.raise_, "disk", "the data directory's disk has 300 MB free")
        wait_for(lambda: visible(driver, "#system-banner"), what="the system banner")
        banner = find(driver, "#system-banner").text
        assert "System alert:" in banner
        assert "disk the data directory's disk has 300 MB free" in banner and "since " in banner
        d.model_was_told("the data directory's disk has 300 MB free")  # in session ops
        d.model.push(text_reply("the queue, noted"))
        d.portal.call(book.raise_, "pending_age:main", "an event has waited 12 min")
        wait_for(lambda: len(texts(driver, "#system-alerts li")) == 2, what="two alerts")
        assert "2 system alerts:" in find(driver, "#system-banner").text
        d.model_was_told("an event has waited 12 min")
        driver.save_screenshot(str(SHOTS / "system-alerts-phone.png"))
        d.model.push(text_reply("good"), text_reply("good"))
        d.portal.call(book.resolve, "disk", "the disk has room again")
        wait_for(lambda: len(texts(driver, "#system-alerts li")) == 1, what="one alert left")
        (left,) = texts(driver, "#system-alerts li")
        assert left.startswith("pending_age:main an event has waited 12 min")
        d.portal.call(book.resolve, "pending_age:main", "the queue moved")
        wait_for(lambda: not visible(driver, "#system-banner"), what="the banner gone")
        d.model_was_told("Resolved: the queue moved")


def test_the_subscriptions_panel_shows_the_agents_watch_and_what_fired(
    daemon: tuple[Daemon, SystemComponent],
) -> None:
    d, _ = daemon
    reports = d.data_dir / "workspace" / "reports"
    reports.mkdir(parents=True)
    watch = {"kind": "file", "path": "reports", "glob": "*.csv", "note": "new sales reports"}
    d.model.push(
        Reply(tool_calls=[ToolCallSpec("connect_channel", watch)]), text_reply("Subscribed.")
    )
    with chromium(SHOTS) as driver:
        open_page(driver, d)
        assert texts(driver, "#subscriptions .card") == []
        find(driver, "textarea[aria-label='Message']").send_keys("watch reports", Keys.ENTER)
        (card,) = wait_for(lambda: texts(driver, "#subscriptions .card"), what="the card")
        [sub] = d.get("/api/status")["subscriptions"]["subscriptions"]
        assert sub["subscription_id"] in card and "new sales reports" in card
        assert "file" in card and "glob: *.csv" in card and "not fired yet" in card
        wait_for(
            lambda: d.get("/api/status")["subscriptions"]["subscriptions"][0]["detail"],
            what="the watch armed",
        )
        d.model.push(text_reply("a new report, noted"))
        (reports / "march.csv").write_text("region,total\nnorth,12\n")
        d.model_was_told("march.csv")
        wait_for(
            lambda: "fired 1×, last " in texts(driver, "#subscriptions .card")[0], what="fired once"
        )
        (card,) = texts(driver, "#subscriptions .card")
        assert card.count(str(reports)) == 1 and card.endswith("· watching")
        driver.save_screenshot(str(SHOTS / "subscriptions-desktop.png"))
