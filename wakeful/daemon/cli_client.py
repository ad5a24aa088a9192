"""A small synchronous client for the daemon's HTTP API, used by the CLI."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from wakeful.daemon.config import Settings


class CliError(Exception):
    """A failure to report on one line; ``exit_code`` 1 (runtime) or 2 (usage)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def base_url(bind: tuple[str, int]) -> str:
    host, port = bind
    # A wildcard bind listens everywhere; the local client reaches it on loopback.
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


class DaemonClient:
    def __init__(self, url: str, token: str, token_origin: str) -> None:
        self.url = url
        self._token = token
        self._token_origin = token_origin
        self._stream_socket: socket.socket | None = None
        self._http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> DaemonClient:
        server = settings.server
        data_dir = settings.daemon.data_dir_path()  # a client creates nothing
        # Found exactly as the server finds it, so both sides agree on the token.
        token = server.client_admin_token(data_dir)
        if token is None:
            raise CliError(
                f"no admin token at {data_dir / 'admin-token'} yet: is `wakeful run` running? "
                "It writes the token at its first start; give the CLI the daemon's config (-c)",
                exit_code=1,
            )
        if server.admin_token is not None:
            origin = "[server] admin_token"
        elif server.admin_token_file is not None:
            origin = str(server.admin_token_file)
        else:
            origin = str(Path(data_dir) / "admin-token")
        return cls(base_url(server.host_port()), token, origin)

    def send(self, session: str, text: str, kind: str) -> dict[str, Any]:
        body = {"session": session, "text": text, "kind": kind}
        return self._json(self._request("POST", "/api/messages", json=body))

    def retry_event(self, event_id: str) -> dict[str, Any]:
        """The quarantined event, now pending again; CliError (404) if it was not quarantined."""
        path = f"/api/events/{quote(event_id, safe='')}/retry"
        entry = self._json(self._request("POST", path)).get("event")
        if not isinstance(entry, dict):
            raise CliError(f"unexpected answer from the daemon: {entry!r}")
        return entry

    @staticmethod
    def segment(name: str) -> str:
        """A session name or id as one URL path segment (``/``, ``?``, ``#`` escaped)."""
        return quote(name, safe="")

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._json(self._request("GET", path, params=params))

    def get_json_list(self, path: str) -> list[dict[str, Any]]:
        data = self._request("GET", path).json()
        if not isinstance(data, list):
            raise CliError(f"unexpected answer from the daemon: {data!r}")
        return data

    def post_json(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._json(self._request("POST", path, json=body or {}))

    def clone(self) -> DaemonClient:
        """Another client to the same daemon, for a second thread."""
        return DaemonClient(self.url, self._token, self._token_origin)

    def close(self) -> None:
        """Also ends a stream being read on another thread (closing alone does not)."""
        sock, self._stream_socket = self._stream_socket, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._http.close()

    def outbox(self, session: str, *, unread: bool) -> list[dict[str, Any]]:
        """The session's unread messages, or its whole history (oldest first)."""
        messages: list[dict[str, Any]] = []
        while True:
            after = messages[-1]["id"] if messages else 0
            params = {"unread": 1} if unread else {"after": after}
            response = self._send_request(
                "GET", f"/api/sessions/{self.segment(session)}/outbox", params=params
            )
            if response.status_code == 404:
                return []  # a daemon without an outbox keeps nothing unread
            self._check(response)
            page = list(self._json(response)["messages"])
            messages += page
            if unread or not page:
                return messages

    def acknowledge(
        self, session: str, *, up_to: int | None = None, ids: tuple[int, ...] = ()
    ) -> None:
        """Tell the daemon these messages were shown, so no chat shows them as unread again."""
        body = {"up_to": up_to, "ids": list(ids)}
        self._request("POST", f"/api/sessions/{self.segment(session)}/outbox/ack", json=body)

    @contextmanager
    def stream(
        self, session: str, deadline: float, read_timeout_s: float | None = None
    ) -> Iterator[Iterator[dict[str, Any]]]:
        """Subscribe to a session's feed; returns once the server says it is live."""
        read = read_timeout_s or max(0.1, deadline - time.monotonic())
        timeout = httpx.Timeout(10, read=read)
        path = f"/api/sessions/{self.segment(session)}/stream"
        try:
            with self._http.stream("GET", path, timeout=timeout) as response:
                self._stream_socket = _socket_of(response)
                if response.status_code != 200:
                    response.read()
                    self._check(response)
                lines = response.iter_lines()
                next(lines, None)  # the ": ready" comment: subscribed
                yield _sse_items(lines, deadline)
        except httpx.TimeoutException:
            raise CliError("timed out waiting for the agent's run to finish") from None
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self._send_request(method, path, **kwargs)
        self._check(response)
        return response

    def _send_request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: Exception) -> CliError:
        return CliError(
            f"cannot reach the daemon at {self.url} — is `wakeful run` running? "
            f"({type(exc).__name__})"
        )

    def _check(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        if response.status_code == 401:
            raise CliError(
                f"the daemon at {self.url} refused the admin token from {self._token_origin}; "
                "point -c at the daemon's config (same data_dir / admin_token_file)"
            )
        try:
            reason = response.json().get("error", response.text)
        except ValueError:
            reason = response.text
        raise CliError(f"the daemon answered {response.status_code}: {reason}")

    @staticmethod
    def _json(response: httpx.Response) -> dict[str, Any]:
        data = response.json()
        if not isinstance(data, dict):
            raise CliError(f"unexpected answer from the daemon: {data!r}")
        return data


def _sse_items(lines: Iterator[str], deadline: float) -> Iterator[dict[str, Any]]:
    """Decoded ``data:`` payloads; comments (heartbeats) only advance the clock."""
    data: list[str] = []
    for line in lines:
        if time.monotonic() > deadline:
            raise CliError("timed out waiting for the agent's run to finish")
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data:
            item = json.loads("\n".join(data))
            data = []
            if isinstance(item, dict):
                yield item


def _socket_of(response: httpx.Response) -> socket.socket | None:
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    return sock if isinstance(sock, socket.socket) else None
