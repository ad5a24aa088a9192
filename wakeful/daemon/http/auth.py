"""Bearer-token check for the admin API."""

from __future__ import annotations

import hmac

from starlette.requests import Request

from wakeful.daemon.http.errors import ApiError

UNAUTHORIZED = (
    "missing or wrong admin token: send 'Authorization: Bearer <token>'. "
    "The token is [server] admin_token / admin_token_file, or the file 'admin-token' "
    "in the daemon's data dir; the `wakeful` CLI reads it from there for you."
)


class TokenCheck:
    """Compares presented tokens to the admin token in constant time."""

    def __init__(self, admin_token: str) -> None:
        if not admin_token:
            raise ValueError("admin_token must not be empty")
        self._expected = admin_token.encode()

    def require(self, request: Request, *, allow_query: bool = False) -> None:
        presented = _bearer(request)
        if presented is None and allow_query:
            # Browsers' EventSource cannot set headers, only the URL.
            presented = request.query_params.get("token")
        if presented is None or not hmac.compare_digest(presented.encode(), self._expected):
            raise ApiError(401, UNAUTHORIZED, {"WWW-Authenticate": 'Bearer realm="wakeful"'})


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
