"""Calling the Bot API over plain httpx: ``POST <api_base>/bot<token>/<method>``.

The token is in every URL, so nothing here lets a URL escape into an error
message or a log line: failures carry the method name and Telegram's
``description`` only, and any text that might hold the token is scrubbed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

# Besides a long poll's own timeout: time to connect and for the answer to arrive.
REQUEST_SLACK_S = 10.0


@dataclass
class BotApiError(Exception):
    """Telegram answered ``{"ok": false}`` (or an HTTP error without a JSON body)."""

    method: str
    error_code: int
    description: str
    retry_after_s: float | None = None

    def __str__(self) -> str:
        return f"{self.method}: {self.error_code} {self.description}"

    @property
    def cannot_parse_entities(self) -> bool:
        return self.error_code == 400 and "can't parse entities" in self.description.lower()


class BotApiUnreachable(Exception):
    """No answer at all: connection refused, reset, timed out."""


class BotApi:
    """One bot's Bot API endpoint; ``call`` returns the ``result`` or raises."""

    def __init__(self, api_base: str, token: str, client: httpx.AsyncClient) -> None:
        self._prefix = f"{api_base.rstrip('/')}/bot{token}/"
        self._token = token
        self._client = client

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout_s: float = 0.0
    ) -> Any:
        """``timeout_s``: how long Telegram itself may hold the request (getUpdates' long poll)."""
        try:
            response = await self._client.post(
                self._prefix + method,
                json=params or {},
                timeout=httpx.Timeout(timeout_s + REQUEST_SLACK_S),
            )
        except httpx.HTTPError as exc:
            raise BotApiUnreachable(f"{method}: {self._scrub(_describe(exc))}") from None
        return self._result(method, response)

    def _result(self, method: str, response: httpx.Response) -> Any:
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            reason = response.reason_phrase or "no JSON in the answer"
            raise BotApiError(method, response.status_code, f"HTTP {response.status_code} {reason}")
        if body.get("ok") is True:
            return body.get("result")
        parameters = body.get("parameters") or {}
        retry_after = parameters.get("retry_after") if isinstance(parameters, dict) else None
        raise BotApiError(
            method,
            int(body.get("error_code") or response.status_code),
            self._scrub(str(body.get("description") or "no description")),
            float(retry_after) if isinstance(retry_after, int | float) else None,
        )

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "<bot token>")


def _describe(exc: httpx.HTTPError) -> str:
    detail = str(exc)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
