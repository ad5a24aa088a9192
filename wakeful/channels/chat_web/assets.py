"""The page's static files: read once from package data, gzip-compressed once (at the first
request that takes gzip), served with ETags."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from functools import cached_property
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response

ASSET_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# Only this page's own files run; nothing is framed, and no Referer leaves the
# daemon (the /login URL carries the admin token). "same-origin", not
# "no-referrer": under that, a browser sends `Origin: null` with the log-in
# form, which the Origin guard rightly refuses.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "referrer-policy": "same-origin",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
}


@dataclass(frozen=True)
class Asset:
    content_type: str
    raw: bytes
    etag: str

    @classmethod
    def load(cls, name: str) -> Asset:
        raw = files(__package__).joinpath("static", name).read_bytes()
        suffix = name[name.rfind(".") :]
        etag = '"' + hashlib.sha256(raw).hexdigest()[:20] + '"'
        return cls(ASSET_TYPES[suffix], raw, etag)

    @cached_property
    def compressed(self) -> bytes:
        # At the first request that takes gzip, not at every start (~3 ms of start → READY
        # for a page that may never be opened); the same bytes each time (mtime=0).
        return gzip.compress(self.raw, compresslevel=9, mtime=0)

    def response(self, request: Request, *, status_code: int = 200, cache: str) -> Response:
        headers = {**SECURITY_HEADERS, "etag": self.etag, "cache-control": cache}
        headers["vary"] = "Accept-Encoding"
        if status_code == 200 and request.headers.get("if-none-match") == self.etag:
            return Response(status_code=304, headers=headers)
        body = self.raw
        if "gzip" in request.headers.get("accept-encoding", ""):
            body, headers["content-encoding"] = self.compressed, "gzip"
        return Response(body, status_code, headers, media_type=self.content_type)


class Assets:
    """Every file under ``static/``, by name."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self._assets = {name: Asset.load(name) for name in names}

    def get(self, name: str) -> Asset | None:
        return self._assets.get(name)

    def __getitem__(self, name: str) -> Asset:
        return self._assets[name]
