"""The approvals and chat-pairing panels, against stand-ins for the routes other issues add.

`GET /api/pairing` / `POST /api/pairing/{platform}/{code}` and `GET /api/approvals` /
`POST /api/approvals/{id}` come with the chat platforms and the approval machinery;
here a small component serves them, with the daemon's own token check, so the page's
requests (cookie + CSRF header) are checked as the real ones will be.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
from anyio.abc import TaskStatus
from selenium.webdriver.remote.webdriver import WebDriver
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.browser import chromium, find, texts, wait_for
from tests.daemon_harness import daemon_settings
from tests.fakes.model_server import FakeModelServer
from wakeful.channels import default_components
from wakeful.daemon.components.context import ComponentSetup
from wakeful.daemon.http.auth import TokenCheck
from wakeful.daemon.lifespan import RunningDaemon, running_daemon

SHOTS = Path(__file__).parents[1] / ".pt-web"


class PendingRequests:
    """Serves one pending pairing request and one pending approval; records decisions."""

    name = "stand-in approvals and pairing"

    def __init__(self) -> None:
        self.pairing = [
            {
                "platform": "telegram",
                "name": "tg",
                "code": "K7Q2M9",
                "user_id": "4242",
                "user_name": "Ada",
                "requested_at": 1796120000.0,
            }
        ]
        self.approvals: list[dict[str, Any]] = [
            {"id": "ap-1", "tool": "shell_exec", "arguments": {"command": "rm -rf build"}}
        ]
        self.decisions: list[tuple[str, Any]] = []

    async def configure(self, setup: ComponentSetup) -> None:
        self.tokens = TokenCheck(setup.settings.server.resolve_admin_token(setup.data_dir))
        for route in (
            Route("/api/pairing", self.list_pairing, methods=["GET"]),
            Route("/api/pairing/{platform}/{code}", self.approve_pairing, methods=["POST"]),
            Route("/api/approvals", self.list_approvals, methods=["GET"]),
            Route("/api/approvals/{id}", self.decide, methods=["POST"]),
        ):
            setup.add_route(route)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def list_pairing(self, request: Request) -> Response:
        self.tokens.require(request)
        return JSONResponse({"pending": self.pairing})

    async def approve_pairing(self, request: Request) -> Response:
        self.tokens.require(request)  # with the cookie: the CSRF header too
        key = (request.path_params["platform"], request.path_params["code"])
        self.decisions.append(("pairing", key))
        self.pairing = [p for p in self.pairing if (p["platform"], p["code"]) != key]
        return JSONResponse({"approved": True})

    async def list_approvals(self, request: Request) -> Response:
        self.tokens.require(request)
        return JSONResponse({"pending": self.approvals})

    async def decide(self, request: Request) -> Response:
        self.tokens.require(request)
        body = await request.json()
        self.decisions.append((request.path_params["id"], body["decision"]))
        self.approvals = [a for a in self.approvals if a["id"] != request.path_params["id"]]
        return JSONResponse({"ok": True})


@pytest.fixture
def daemon(
    tmp_path: Path, model_server: FakeModelServer
) -> Iterator[tuple[RunningDaemon, PendingRequests]]:
    """The daemon in a thread of its own, so the test can drive a browser meanwhile."""
    settings = daemon_settings(tmp_path, model_server.base_url)
    pending = PendingRequests()
    components = [*default_components(settings), pending]
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(running_daemon(settings, components)) as running,
    ):
        yield running, pending


def test_pairing_and_approval_requests_are_decided_from_the_page(
    daemon: tuple[RunningDaemon, PendingRequests],
) -> None:
    running, pending = daemon
    with chromium(SHOTS) as driver:
        driver.get(f"{running.url}/login?token={running.admin_token}")
        wait_for(lambda: texts(driver, "#pairing .card"), what="the pairing request")
        [card] = texts(driver, "#pairing .card")
        assert "Ada on telegram:tg" in card and "code K7Q2M9" in card
        assert "rm -rf build" in find(driver, "#approvals .card").text
        driver.save_screenshot(str(SHOTS / "panels.png"))
        find(driver, "#pairing button[aria-label='Approve Ada']").click()
        wait_for(lambda: not texts(driver, "#pairing .card"), what="the pairing panel empty")
        find(driver, "#approvals button[aria-label='Deny shell_exec']").click()
        wait_for(lambda: not texts(driver, "#approvals .card"), what="the approvals panel empty")
        assert "Nobody asks to pair" in _empty_text(driver, "pairing")
    assert pending.decisions == [("pairing", ("telegram", "K7Q2M9")), ("ap-1", "deny")]


def _empty_text(driver: WebDriver, panel: str) -> str:
    text: str = driver.execute_script(
        "return getComputedStyle(arguments[0], '::after').content", find(driver, f"#{panel}")
    )
    return text
