"""A small web site on a loopback port for fetch_url: pages, JSON, binary, redirects.

It records the path and Host header of every request it is sent, so a test can
prove that a refused fetch never reached it.
"""

from __future__ import annotations

import gzip
import json
import threading

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fakes.loopback_http import LoopbackHttpServer, ServesWhileOpen

PAGE = """<!doctype html><html><head><title>The  test page</title>
<style>body { color: red }</style><script>var secret = "not text";</script></head>
<body><h1>Welcome</h1><p>A paragraph with <a href="/next">a relative link</a>.</p>
<ul><li>first item</li><li>second item</li></ul></body></html>"""
DATA = {"name": "wakeful", "items": [1, 2, 3]}
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4


class FakeWebSite(ServesWhileOpen):
    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []  # (path with query, Host header)
        self._lock = threading.Lock()
        routes = [
            Route("/page", self._page),
            Route("/data.json", self._json),
            Route("/lines", self._lines),
            Route("/big", self._big),
            Route("/png", self._png),
            Route("/gzip", self._gzip),
            Route("/bomb", self._bomb),
            Route("/missing", self._missing),
            Route("/host", self._host),
            Route("/slow", self._slow),
            Route("/hops/{n:int}", self._hops),
            Route("/to", self._to),
        ]
        self._http = LoopbackHttpServer(Starlette(routes=routes), "fake web site")
        self.port = self._http.port
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._http.start()

    def close(self) -> None:
        self._http.close()

    def paths(self) -> list[str]:
        with self._lock:
            return [path for path, _ in self.requests]

    def _seen(self, request: Request) -> None:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        with self._lock:
            self.requests.append((path, request.headers.get("host", "")))

    async def _page(self, request: Request) -> Response:
        self._seen(request)
        return Response(PAGE, media_type="text/html; charset=utf-8")

    async def _json(self, request: Request) -> Response:
        self._seen(request)
        return Response(json.dumps(DATA), media_type="application/json")

    async def _lines(self, request: Request) -> Response:
        self._seen(request)
        count = int(request.query_params.get("n", "3000"))
        return PlainTextResponse("".join(f"line {i}\n" for i in range(1, count + 1)))

    async def _big(self, request: Request) -> Response:
        self._seen(request)
        return PlainTextResponse("x" * int(request.query_params["bytes"]))

    async def _png(self, request: Request) -> Response:
        self._seen(request)
        return Response(PNG, media_type="image/png")

    async def _gzip(self, request: Request) -> Response:
        self._seen(request)  # compressed although the client asked for identity
        body = gzip.compress(b"compressed text\n" * 10)
        return Response(body, media_type="text/plain", headers={"content-encoding": "gzip"})

    async def _bomb(self, request: Request) -> Response:
        """A few KB that inflate to 20 MB."""
        self._seen(request)
        body = gzip.compress(b"a" * 20_000_000, compresslevel=1)
        return Response(body, media_type="text/plain", headers={"content-encoding": "gzip"})

    async def _missing(self, request: Request) -> Response:
        self._seen(request)
        return PlainTextResponse("no such page here", status_code=404)

    async def _host(self, request: Request) -> Response:
        self._seen(request)
        return PlainTextResponse(f"host={request.headers.get('host')}")

    async def _slow(self, request: Request) -> Response:
        self._seen(request)
        await anyio.sleep_forever()  # cut off when the site closes
        raise AssertionError("unreachable")

    async def _hops(self, request: Request) -> Response:
        """``/hops/N`` redirects N times (relative Locations), then serves the page."""
        self._seen(request)
        n = int(request.path_params["n"])
        return RedirectResponse(f"/hops/{n - 1}" if n > 1 else "/page", status_code=302)

    async def _to(self, request: Request) -> Response:
        """``/to?target=URL`` redirects to URL, whatever it is."""
        self._seen(request)
        return RedirectResponse(request.query_params["target"], status_code=301)
