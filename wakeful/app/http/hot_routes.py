"""Routes answered ahead of Starlette's middleware stack and router.

A webhook sender may deliver thousands of requests a second, and for such an
endpoint the generic stack (two exception middlewares, the router's scan,
``request_response``'s wrappers) cost about a tenth of each request. A hot
route is an ordinary Starlette ``Route`` that is also in the app's route
table: this front only takes the requests it matches fully (path and
method) and answers errors with the app's own handlers, so a client sees
the same responses either way; everything else, a wrong method included,
goes on to the app.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from wakeful.kernel.http.errors import http_error, server_error


class HotRoutes:
    def __init__(self, app: ASGIApp, routes: Sequence[Route]) -> None:
        self.app = app
        self._routes = list(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for route in self._routes:
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    scope.update(child_scope)
                    await self._serve(route, scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _serve(self, route: Route, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        try:
            response = await route.endpoint(request)
        except HTTPException as exc:
            response = await http_error(request, exc)
        except Exception as exc:
            # As Starlette's ServerErrorMiddleware: the client gets a 500 and the
            # exception goes on to the server, which logs it with its traceback.
            await (await server_error(request, exc))(scope, receive, send)
            raise
        await response(scope, receive, send)
