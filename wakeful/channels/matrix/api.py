"""The few Matrix client-server calls wakeful makes, on plain httpx.

No SDK: wakeful needs login, /sync, join/leave, send and typing — eight
endpoints — and neither end-to-end encryption nor a local state store, which
is what an SDK such as matrix-nio mostly brings (with its own pins).

The access token lives in this object's memory only: it is sent in the
``Authorization`` header and never logged (httpx logs request lines, not
headers; error messages carry the homeserver's errcode and text, never it).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx

CLIENT_PATH = "/_matrix/client/v3"


class MatrixError(Exception):
    """The homeserver refused a call, or could not be reached (status 0)."""

    def __init__(
        self, status: int, errcode: str, message: str, retry_after_s: float | None = None
    ) -> None:
        super().__init__(f"{errcode or status}: {message}")
        self.status = status
        self.errcode = errcode
        self.retry_after_s = retry_after_s

    @property
    def transient(self) -> bool:
        """Worth trying again later: unreachable, rate limited, or a server error."""
        return self.status == 0 or self.status == 429 or self.status >= 500

    @property
    def bad_token(self) -> bool:
        return self.status == 401 or self.errcode == "M_UNKNOWN_TOKEN"


def error_from(response: httpx.Response) -> MatrixError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    retry_ms = body.get("retry_after_ms")
    retry_after_s = retry_ms / 1000 if isinstance(retry_ms, int | float) else None
    header = response.headers.get("Retry-After")
    if retry_after_s is None and header and header.isdigit():
        retry_after_s = float(header)
    message = str(body.get("error") or response.reason_phrase or "")[:300]
    return MatrixError(response.status_code, str(body.get("errcode", "")), message, retry_after_s)


class MatrixApi:
    """One account's calls to its homeserver."""

    def __init__(
        self, homeserver: str, *, access_token: str | None = None, timeout_s: float = 30.0
    ) -> None:
        self.homeserver = homeserver.rstrip("/")
        self._token = access_token
        self._http = httpx.AsyncClient(
            base_url=self.homeserver + CLIENT_PATH,
            timeout=httpx.Timeout(timeout_s, connect=10.0),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        timeout_s: float | None = None,
        auth: bool = True,
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self._token}"} if auth and self._token else {}
        extra: dict[str, Any] = {}
        if timeout_s is not None:
            extra["timeout"] = httpx.Timeout(timeout_s, connect=10.0)
        try:
            response = await self._http.request(
                method, path, json=body, params=params, headers=headers, **extra
            )
        except httpx.HTTPError as exc:  # refused, reset, timed out: the server may be restarting
            raise MatrixError(0, "", f"{type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise error_from(response)
        try:
            data = response.json()
        except ValueError:
            raise MatrixError(502, "", "the homeserver answered with something not JSON") from None
        if not isinstance(data, dict):
            raise MatrixError(502, "", "the homeserver answered with something not a JSON object")
        return data

    async def login(self, user_id: str, password: str, device_id: str) -> str:
        """m.login.password as ``device_id``; keeps the token and returns the user id."""
        body = {
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user_id},
            "password": password,
            "device_id": device_id,
            "initial_device_display_name": "wakeful",
        }
        data = await self._call("POST", "/login", body=body, auth=False)
        self._token = str(data["access_token"])
        return str(data["user_id"])

    async def whoami(self) -> str:
        return str((await self._call("GET", "/account/whoami"))["user_id"])

    async def sync(
        self, since: str | None, *, timeout_ms: int, filter_json: dict[str, Any]
    ) -> dict[str, Any]:
        params = {"timeout": str(timeout_ms), "filter": json.dumps(filter_json)}
        if since is not None:
            params["since"] = since
        # The long poll holds the request up to timeout_ms: give the read that much more.
        return await self._call("GET", "/sync", params=params, timeout_s=timeout_ms / 1000 + 30)

    async def join(self, room_id: str) -> None:
        await self._call("POST", f"/join/{quote(room_id, safe='')}", body={})

    async def leave(self, room_id: str) -> None:
        await self._call("POST", f"/rooms/{quote(room_id, safe='')}/leave", body={})

    async def send_message(self, room_id: str, txn_id: str, content: dict[str, Any]) -> str:
        """PUT …/send/m.room.message/{txn_id}: the homeserver answers a retried txn_id
        with the event it already made, so a resend after a crash posts nothing new."""
        path = f"/rooms/{quote(room_id, safe='')}/send/m.room.message/{quote(txn_id, safe='')}"
        return str((await self._call("PUT", path, body=content))["event_id"])

    async def typing(self, room_id: str, user_id: str, *, timeout_ms: int) -> None:
        path = f"/rooms/{quote(room_id, safe='')}/typing/{quote(user_id, safe='')}"
        await self._call("PUT", path, body={"typing": True, "timeout": timeout_ms})
