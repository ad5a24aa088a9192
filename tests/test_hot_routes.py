"""Hot routes answer like the app would: same statuses, same JSON errors, over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wakeful.app.http.hot_routes import HotRoutes
from wakeful.app.http.serve import QuietServer, bind_socket, serve_http
from wakeful.kernel.http.errors import ApiError, http_error, server_error

pytestmark = pytest.mark.anyio


async def hot(request: Request) -> Response:
    name = request.path_params["name"]
    if name == "refused":
        raise ApiError(409, "refused on purpose", {"Retry-After": "3"})
    if name == "broken":
        raise RuntimeError("a bug in the handler")
    return JSONResponse({"hot": name, "body": (await request.body()).decode()}, status_code=202)


async def cold(request: Request) -> Response:
    return JSONResponse({"cold": True})


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    hot_route = Route("/hot/{name}", hot, methods=["POST"])
    handlers = {ApiError: http_error, 404: http_error, 405: http_error, Exception: server_error}
    app = Starlette(
        routes=[hot_route, Route("/cold", cold, methods=["GET"])],
        exception_handlers=handlers,  # type: ignore[arg-type]
    )
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    servers: list[QuietServer] = []
    async with anyio.create_task_group() as group:
        await group.start(serve_http, HotRoutes(app, [hot_route]), sock, servers)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            yield http
        servers[0].request_exit()


async def test_a_matching_request_is_served_with_its_path_params(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/hot/ci", content=b"payload")
    assert response.status_code == 202
    assert response.json() == {"hot": "ci", "body": "payload"}


async def test_errors_are_the_apps_json_errors(client: httpx.AsyncClient) -> None:
    """ApiError keeps its status, message and headers; a bug is a 500 that hides the detail."""
    refused = await client.post("/hot/refused")
    assert (refused.status_code, refused.json()) == (409, {"error": "refused on purpose"})
    assert refused.headers["retry-after"] == "3"
    broken = await client.post("/hot/broken")
    assert broken.status_code == 500
    assert broken.json() == {"error": "internal error; see the daemon's log"}


async def test_what_the_front_does_not_take_goes_to_the_app(client: httpx.AsyncClient) -> None:
    """Wrong method → the app's 405; other paths → the app's routes and 404."""
    wrong_method = await client.get("/hot/ci")
    assert wrong_method.status_code == 405
    assert wrong_method.json() == {"error": "method GET is not allowed on /hot/ci"}
    assert (await client.get("/cold")).json() == {"cold": True}
    nested = await client.post("/hot/ci/extra")
    assert nested.status_code == 404
    assert "no such endpoint" in nested.json()["error"]
