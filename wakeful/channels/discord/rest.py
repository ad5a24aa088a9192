"""Discord's REST API over httpx, with its rate limits kept.

Every answer's ``X-RateLimit-Remaining`` / ``X-RateLimit-Reset-After`` is
noted per route (method and path, the channel id kept as Discord's top-level
resource, other ids folded): once a route has nothing remaining, calls on it
fail fast with :class:`RateLimited` until its reset instead of earning a 429.
A 429's ``retry_after`` (the body's, in seconds) holds that route, or every
route when the body or ``X-RateLimit-Global`` says the limit is global.
The caller decides what waiting means: the outbox retries later
(``TryLater``), the start-up catch-up sleeps.
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

# Discord asks bots for this form of User-Agent.
USER_AGENT = "DiscordBot (https://github.com/wakeful/wakeful, 0.1)"
TIMEOUT_S = 15.0
_ID = re.compile(r"/\d{5,}")


class RestError(Exception):
    """Discord answered with an error status (not 429)."""

    def __init__(self, status: int, message: str, code: int | None = None) -> None:
        super().__init__(f"HTTP {status}" + (f" (code {code})" if code else "") + f": {message}")
        self.status, self.message, self.code = status, message, code


class RestUnreachable(Exception):
    """No answer: connection refused, timeout, a broken response."""


class RateLimited(Exception):
    """Discord said (or its headers said) to wait ``retry_after_s`` before this route again."""

    def __init__(self, retry_after_s: float, *, is_global: bool) -> None:
        scope = "global" if is_global else "route"
        super().__init__(f"rate limited ({scope}); retry after {retry_after_s:.2f} s")
        self.retry_after_s, self.is_global = retry_after_s, is_global


def route_key(method: str, path: str) -> str:
    """The route a limit belongs to: ``/channels/<id>`` keeps its id (a top-level
    resource has limits of its own), later ids are folded."""
    head, rest = "", path
    match = re.match(r"^(/channels/\d+|/guilds/\d+|/webhooks/\d+)(.*)$", path)
    if match is not None:
        head, rest = match.group(1), match.group(2)
    return f"{method} {head}{_ID.sub('/{id}', rest)}"


def shown(method: str, path: str) -> str:
    """The call as logs may show it: an interaction's token answers for the bot, so it is cut."""
    if path.startswith("/interactions/"):
        return f"{method} /interactions/…/callback"
    return f"{method} {path}"


class DiscordRest:
    """One bot's REST calls; ``Authorization: Bot <token>``."""

    def __init__(self, base: str, token: str, http: httpx.AsyncClient) -> None:
        self._base = base
        self._headers = {"Authorization": f"Bot {token}", "User-Agent": USER_AGENT}
        self._http = http
        self._route_until: dict[str, float] = {}  # route → monotonic time it may be used again
        self._global_until = 0.0
        self.calls = 0

    def wait_s(self, method: str, path: str) -> tuple[float, bool]:
        """Seconds until ``method path`` may be called, and whether the global limit is why."""
        now = time.monotonic()
        route = self._route_until.get(route_key(method, path), 0.0) - now
        global_ = self._global_until - now
        return (global_, True) if global_ >= route else (route, False)

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        """The answer's JSON (None for 204); raises RateLimited, RestError or RestUnreachable."""
        wait, is_global = self.wait_s(method, path)
        if wait > 0:
            raise RateLimited(wait, is_global=is_global)
        self.calls += 1
        try:
            response = await self._http.request(
                method, self._base + path, json=json, params=params, headers=self._headers,
                timeout=TIMEOUT_S,
            )  # fmt: skip
        except httpx.HTTPError as exc:
            raise RestUnreachable(f"{shown(method, path)}: {type(exc).__name__}") from None
        key = route_key(method, path)
        self._note_headers(key, response)
        if response.status_code == 429:
            raise self._rate_limited(key, response)
        if response.status_code >= 400:
            message, code = _error_of(response)
            raise RestError(response.status_code, message, code)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise RestUnreachable(f"{shown(method, path)}: the answer is not JSON") from None

    def _note_headers(self, key: str, response: httpx.Response) -> None:
        remaining = response.headers.get("x-ratelimit-remaining")
        reset_after = _float(response.headers.get("x-ratelimit-reset-after"))
        if remaining == "0" and reset_after is not None:
            self._route_until[key] = time.monotonic() + reset_after

    def _rate_limited(self, key: str, response: httpx.Response) -> RateLimited:
        try:
            body = response.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        retry_after = _float(body.get("retry_after")) or _float(response.headers.get("retry-after"))
        wait = max(retry_after or 1.0, 0.0)
        is_global = bool(body.get("global")) or (
            response.headers.get("x-ratelimit-global", "").lower() == "true"
        )
        until = time.monotonic() + wait
        if is_global:
            self._global_until = max(self._global_until, until)
        else:
            self._route_until[key] = max(self._route_until.get(key, 0.0), until)
        return RateLimited(wait, is_global=is_global)


def _error_of(response: httpx.Response) -> tuple[str, int | None]:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase, None
    if not isinstance(body, dict):
        return str(body)[:200], None
    code = body.get("code")
    return str(body.get("message", ""))[:200], code if isinstance(code, int) else None


def _float(value: object) -> float | None:
    if value is None:
        return None
    try:
        return float(str(value))
    except ValueError:
        return None
