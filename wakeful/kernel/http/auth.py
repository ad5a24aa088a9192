"""Who may call the admin API: the bearer token, or the web page's session cookie.

The web page logs in once with the admin token (``/login``) and then holds an
HttpOnly, SameSite=Strict cookie. The cookie is stateless — signed with a key
derived from the admin token — so it survives a daemon restart and dies when
the token changes; ``/logout`` records the session as revoked
(:mod:`wakeful.kernel.http.revocations`), so a copied cookie stops working
too. A browser sends cookies on its own, so a state-changing
request made with the cookie must also carry the session's CSRF token in a
header, which only the page itself can read (from ``/web/session``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from typing import Literal

from starlette.requests import Request

from wakeful.kernel.http.errors import ApiError
from wakeful.kernel.http.revocations import Revocations, revocations_for

UNAUTHORIZED = (
    "missing or wrong admin token: send 'Authorization: Bearer <token>'. "
    "The token is [server] admin_token / admin_token_file, or the file 'admin-token' "
    "in the daemon's data dir; the `wakeful` CLI reads it from there for you."
)
BAD_CSRF = (
    "missing or wrong X-CSRF-Token header: requests that change something and log in "
    "with the web page's cookie must send it; reload the page to get a fresh one"
)
SESSION_COOKIE = "wakeful_session"
CSRF_HEADER = "x-csrf-token"
SESSION_MAX_AGE_S = 30 * 86400
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

Credential = Literal["bearer", "cookie"]


class WebSessions:
    """Issues and checks the web page's session cookies and their CSRF tokens."""

    def __init__(self, admin_token: str) -> None:
        # A derived key: the cookie never contains (or reveals) the admin token.
        self._key = hashlib.sha256(b"wakeful web session\0" + admin_token.encode()).digest()
        self.revoked: Revocations = revocations_for(self._key, SESSION_MAX_AGE_S)

    def issue(self) -> str:
        body = f"{int(time.time())}.{secrets.token_urlsafe(18)}"
        return f"{body}.{self._sign('session', body)}"

    def verify(self, cookie: str | None) -> str | None:
        """The session's id (``issued.nonce``) when the cookie is ours and not expired."""
        if not cookie:
            return None
        body, _, signature = cookie.rpartition(".")
        issued, _, _nonce = body.partition(".")
        if not issued.isdigit() or not _same(signature, self._sign("session", body)):
            return None
        if time.time() - int(issued) > SESSION_MAX_AGE_S or body in self.revoked:
            return None
        return body

    def csrf_token(self, session_id: str) -> str:
        return self._sign("csrf", session_id)

    def _sign(self, purpose: str, body: str) -> str:
        digest = hmac.new(self._key, f"{purpose}:{body}".encode(), hashlib.sha256)
        return digest.hexdigest()[:43]


class TokenCheck:
    """Compares presented tokens to the admin token in constant time."""

    def __init__(self, admin_token: str) -> None:
        if not admin_token:
            raise ValueError("admin_token must not be empty")
        self._expected = admin_token.encode()
        self.sessions = WebSessions(admin_token)

    def token_ok(self, presented: str) -> bool:
        return hmac.compare_digest(presented.encode(), self._expected)

    def require(self, request: Request, *, allow_query: bool = False) -> Credential:
        presented = _bearer(request)
        if presented is None:
            session_id = self.sessions.verify(request.cookies.get(SESSION_COOKIE))
            if session_id is not None:
                self._require_csrf(request, session_id)
                return "cookie"
        if presented is None and allow_query:
            # Browsers' EventSource cannot set headers, only the URL.
            presented = request.query_params.get("token")
        if presented is None or not self.token_ok(presented):
            raise ApiError(401, UNAUTHORIZED, {"WWW-Authenticate": 'Bearer realm="wakeful"'})
        return "bearer"

    def web_session(self, request: Request) -> str | None:
        """The page's session id from its cookie, or None (no CSRF check: reads only)."""
        return self.sessions.verify(request.cookies.get(SESSION_COOKIE))

    def _require_csrf(self, request: Request, session_id: str) -> None:
        if request.method in SAFE_METHODS:
            return
        sent = request.headers.get(CSRF_HEADER, "")
        if not _same(sent, self.sessions.csrf_token(session_id)):
            raise ApiError(403, BAD_CSRF)


def _same(given: str, expected: str) -> bool:
    # Bytes: compare_digest refuses str with non-ASCII characters (a header may have them).
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
