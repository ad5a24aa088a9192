"""The web page as a daemon component: ``/``, ``/login``, its files and its few routes."""

from __future__ import annotations

import anyio
from anyio.abc import TaskStatus
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wakeful.channels.chat_web.assets import Assets
from wakeful.channels.chat_web.login import Login
from wakeful.channels.chat_web.login_codes import LoginCodes
from wakeful.channels.chat_web.page_api import PageApi
from wakeful.core.components.context import ComponentSetup
from wakeful.kernel.http.auth import TokenCheck
from wakeful.kernel.http.errors import ApiError

PAGE_FILES = ("index.html", "login.html", "app.js", "markdown.js", "app.css", "icon.svg")
STATIC_FILES = frozenset({"app.js", "markdown.js", "app.css", "icon.svg"})


class ChatWebComponent:
    name = "web"

    async def configure(self, setup: ComponentSetup) -> None:
        admin_token = setup.settings.server.resolve_admin_token(setup.data_dir)
        self.tokens = TokenCheck(admin_token)
        # Logged-out sessions outlive a restart, as their cookies do.
        await anyio.to_thread.run_sync(self.tokens.sessions.revoked.load, setup.data_dir)
        self.assets = Assets(PAGE_FILES)
        self.login = Login(self.tokens, self.assets["login.html"], LoginCodes())
        self.api = PageApi(self.tokens, setup.feed, setup.store, setup.registrations)
        session_path = "/web/sessions/{session:path}"
        for route in (
            Route("/", self.index, methods=["GET"]),
            Route("/login", self.login.get, methods=["GET"]),
            Route("/login", self.login.post, methods=["POST"]),
            Route("/logout", self.login.logout, methods=["POST"]),
            Route("/api/login-codes", self.login.issue_code, methods=["POST"]),
            Route("/static/{name}", self.static, methods=["GET"]),
            Route("/web/session", self.api.session, methods=["GET"]),
            Route("/web/stream", self.api.stream, methods=["GET"]),
            Route(f"{session_path}/model-calls", self.api.model_calls, methods=["GET"]),
            Route(
                f"{session_path}/tasks/{{task_id}}/cancel", self.api.cancel_task, methods=["POST"]
            ),
        ):
            setup.add_route(route)

    async def index(self, request: Request) -> Response:
        if self.tokens.web_session(request) is None:
            return self.login.form(request)
        return self.assets["index.html"].response(request, cache="no-cache")

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        asset = self.assets.get(name) if name in STATIC_FILES else None
        if asset is None:
            raise ApiError(404, f"no file {name!r} here")
        return asset.response(request, cache="no-cache")

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            await anyio.sleep_forever()
        finally:
            self.api.streams.close_all()  # open pages' streams would hold the server's shutdown
