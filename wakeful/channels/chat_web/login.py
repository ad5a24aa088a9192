"""Logging the page in: a one-time code or the admin token once, a session cookie after.

``GET /login?code=…`` is the URL `wakeful open` prints (the code is good once, for two
minutes: see login_codes.py); the page's own form posts the admin token, so it never
stays in the browser's history. A token in the URL (older `wakeful open` links) is
still taken, once, but the link the CLI prints never carries it any more.
"""

from __future__ import annotations

import html
from urllib.parse import parse_qs

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from wakeful.channels.chat_web.assets import SECURITY_HEADERS, Asset
from wakeful.channels.chat_web.login_codes import CODE_TTL_S, LoginCodes
from wakeful.kernel.http.auth import SESSION_COOKIE, SESSION_MAX_AGE_S, TokenCheck
from wakeful.kernel.http.body import read_capped
from wakeful.kernel.http.errors import ApiError
from wakeful.kernel.http.rate_limit import FailureLimit

MAX_FORM_BYTES = 4096
# Wrong tokens per client address before /login answers 429 for the rest of the window.
LOGIN_MAX_FAILURES = 5
LOGIN_WINDOW_S = 60.0
USED_CODE = (
    "That log-in link was used already or is over two minutes old. Run `wakeful open` "
    "on the daemon's host for a new one, or paste the admin token below."
)
WRONG_TOKEN = (
    "That is not this daemon's admin token. Run `wakeful open` on the daemon's host for "
    "a log-in link, or paste the token from the file admin-token in its data dir."
)


class Login:
    def __init__(self, tokens: TokenCheck, form: Asset, codes: LoginCodes) -> None:
        self._tokens = tokens
        self._form = form
        self._codes = codes
        self._failures = FailureLimit(LOGIN_MAX_FAILURES, LOGIN_WINDOW_S)

    async def get(self, request: Request) -> Response:
        code = request.query_params.get("code")
        if code is not None:
            self._check_rate(request)
            if not self._codes.take(code):
                self._failures.failed(_client(request))
                return self.form(request, USED_CODE, status_code=401)
            return self._signed_in(request)
        token = request.query_params.get("token")
        if token is None:
            return self.form(request)
        self._check_rate(request)
        return self._log_in(request, token)

    async def issue_code(self, request: Request) -> Response:
        """POST /api/login-codes (admin token): a code for one log-in link."""
        self._tokens.require(request)
        body = {"code": self._codes.issue(), "expires_in_s": int(CODE_TTL_S)}
        return JSONResponse(body, headers={"cache-control": "no-store"})

    async def post(self, request: Request) -> Response:
        self._check_rate(request)
        body = await read_capped(request, MAX_FORM_BYTES)
        fields = parse_qs(body.decode("utf-8", "replace"))
        return self._log_in(request, fields.get("token", [""])[0])

    async def logout(self, request: Request) -> Response:
        self._tokens.require(request)  # with the cookie: the CSRF header too
        session_id = self._tokens.web_session(request)
        if session_id is not None:
            # Revoked, not only deleted: a copy of the cookie must stop working too.
            sessions = self._tokens.sessions
            sessions.revoked.revoke(session_id)
            await anyio.to_thread.run_sync(sessions.revoked.save)
        response = Response(status_code=204)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    def form(self, request: Request, error: str = "", status_code: int = 200) -> Response:
        """The log-in form (plain HTML: it works without JavaScript)."""
        text = self._form.raw.decode()
        if error:
            text = text.replace(
                "<!--error-->", f'<p class="error" role="alert">{html.escape(error)}</p>'
            )
        headers = {**SECURITY_HEADERS, "cache-control": "no-store"}
        return Response(text, status_code, headers, media_type=self._form.content_type)

    def _check_rate(self, request: Request) -> None:
        wait = self._failures.retry_after(_client(request))
        if wait is not None:
            raise ApiError(
                429,
                f"too many wrong tokens from this address ({LOGIN_MAX_FAILURES} in "
                f"{LOGIN_WINDOW_S:.0f} s); try again in {wait} s, or use `wakeful open`",
                {"Retry-After": str(wait)},
            )

    def _log_in(self, request: Request, token: str) -> Response:
        if not token.strip() or not self._tokens.token_ok(token.strip()):
            self._failures.failed(_client(request))
            return self.form(request, WRONG_TOKEN, status_code=401)
        return self._signed_in(request)

    def _signed_in(self, request: Request) -> Response:
        response = RedirectResponse("/", status_code=303, headers={"cache-control": "no-store"})
        response.headers["referrer-policy"] = SECURITY_HEADERS["referrer-policy"]
        response.set_cookie(
            SESSION_COOKIE,
            self._tokens.sessions.issue(),
            max_age=SESSION_MAX_AGE_S,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"
