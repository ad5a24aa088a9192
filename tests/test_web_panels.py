"""The chat-pairing and approvals panels.

Pairing is the real thing: a stranger writes on a (loopback) chat platform while
the page is open, the request shows up live, and Approve / Deny from the page
decide it. `GET /api/approvals` / `POST /api/approvals/{id}` come with the
approval machinery; until then a small component serves them, with the daemon's
own token check, so the page's requests (cookie + CSRF header) are checked as
the real ones will be.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
from anyio.abc import TaskStatus
from anyio.from_thread import BlockingPortal
from selenium.webdriver.remote.webdriver import WebDriver
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.browser import chromium, find, texts, wait_for
from tests.chat_loopback import LoopbackChat
from tests.daemon_harness import daemon_settings
from tests.fakes.model_server import FakeModelServer
from wakeful.channels import default_components
from wakeful.channels.chat.inbound import PAIRED_TEXT, PlatformMessage
from wakeful.daemon.components.context import ComponentSetup
from wakeful.daemon.http.auth import TokenCheck
from wakeful.daemon.lifespan import RunningDaemon, running_daemon

SHOTS = Path(__file__).parents[1] / ".pt-web"


class PendingRequests:
    """Serves one pending approval; records decisions."""

    name = "stand-in approvals"

    def __init__(self) -> None:
        self.approvals: list[dict[str, Any]] = [
            {"id": "ap-1", "tool": "shell_exec", "arguments": {"command": "rm -rf build"}}
        ]
        self.decisions: list[tuple[str, Any]] = []

    async def configure(self, setup: ComponentSetup) -> None:
        self.tokens = TokenCheck(setup.settings.server.resolve_admin_token(setup.data_dir))
        for route in (
            Route("/api/approvals", self.list_approvals, methods=["GET"]),
            Route("/api/approvals/{id}", self.decide, methods=["POST"]),
        ):
            setup.add_route(route)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def list_approvals(self, request: Request) -> Response:
        self.tokens.require(request)
        return JSONResponse({"pending": self.approvals})

    async def decide(self, request: Request) -> Response:
        self.tokens.require(request)
        body = await request.json()
        self.decisions.append((request.path_params["id"], body["decision"]))
        self.approvals = [a for a in self.approvals if a["id"] != request.path_params["id"]]
        return JSONResponse({"ok": True})


@dataclass
class Daemon:
    running: RunningDaemon
    pending: PendingRequests
    chat: LoopbackChat
    portal: BlockingPortal

    def stranger_writes(self, n: int, user: str, name: str) -> None:
        assert self.chat.inbound is not None
        message = PlatformMessage(str(n), user, name, f"chat-{user}", "hello, who are you?")
        self.portal.call(self.chat.inbound.receive, message)


@pytest.fixture
def daemon(tmp_path: Path, model_server: FakeModelServer) -> Iterator[Daemon]:
    """The daemon in a thread of its own, so the test can drive a browser meanwhile."""
    settings = daemon_settings(tmp_path, model_server.base_url)
    pending, chat = PendingRequests(), LoopbackChat({"1"})
    components = [*default_components(settings), pending, chat]
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(running_daemon(settings, components)) as running,
    ):
        yield Daemon(running, pending, chat, portal)


def test_pairing_and_approval_requests_are_decided_from_the_page(daemon: Daemon) -> None:
    running, pending, client = daemon.running, daemon.pending, daemon.chat.client
    with chromium(SHOTS) as driver:
        driver.get(f"{running.url}/login?token={running.admin_token}")
        wait_for(lambda: texts(driver, "#approvals .card"), what="the approval request")
        assert "rm -rf build" in find(driver, "#approvals .card").text
        # Strangers write while the page is open: their requests show up live.
        daemon.stranger_writes(1, "4242", "Ada")
        daemon.stranger_writes(2, "666", "Mallory")
        wait_for(lambda: len(texts(driver, "#pairing .card")) == 2, what="two pairing requests")
        ada, mallory = texts(driver, "#pairing .card")
        code = re.search(r"code ([A-Z0-9]{4}-[A-Z0-9]{4})", ada)
        assert (
            "Ada on telegram:loop" in ada
            and code is not None
            and code.group(1) in (client.sent[0][1])
        )
        assert "Mallory on telegram:loop" in mallory
        driver.save_screenshot(str(SHOTS / "panels.png"))
        find(driver, "#pairing button[aria-label='Approve Ada']").click()
        wait_for(lambda: len(texts(driver, "#pairing .card")) == 1, what="Ada decided")
        find(driver, "#pairing button[aria-label='Deny Mallory']").click()
        wait_for(lambda: not texts(driver, "#pairing .card"), what="the pairing panel empty")
        find(driver, "#approvals button[aria-label='Deny shell_exec']").click()
        wait_for(lambda: not texts(driver, "#approvals .card"), what="the approvals panel empty")
        assert "Nobody asks to pair" in _empty_text(driver, "pairing")
    assert pending.decisions == [("ap-1", "deny")]
    wait_for(lambda: len(client.sent) == 3, what="Ada told she is paired")
    assert client.sent[2][:2] == ("chat-4242", PAIRED_TEXT)  # Mallory is told nothing more


def _empty_text(driver: WebDriver, panel: str) -> str:
    text: str = driver.execute_script(
        "return getComputedStyle(arguments[0], '::after').content", find(driver, f"#{panel}")
    )
    return text
