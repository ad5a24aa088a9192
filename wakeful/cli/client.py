"""A small synchronous client for the daemon's HTTP API, used by the CLI.

Standard library only (``http.client``): a client command should cost little more
than the interpreter's start; an HTTP library's import alone took longer than
the request.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from wakeful.cli.endpoint import base_url, endpoint

__all__ = ["CliError", "DaemonClient", "base_url"]

REQUEST_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0


class CliError(Exception):
    """A failure to report on one line; ``exit_code`` 1 (runtime) or 2 (usage)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Response:
    """One answer, read whole."""

    status_code: int
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


class DaemonClient:
    def __init__(self, url: str, token: str, token_origin: str) -> None:
        self.url = url
        self._token = token
        self._token_origin = token_origin
        self._stream_socket: socket.socket | None = None
        parts = urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._connection: http.client.HTTPConnection | None = None

    @classmethod
    def from_config(cls, config: Path | None) -> DaemonClient:
        found = endpoint(config)
        if found.token is None:
            raise CliError(
                f"no admin token at {found.token_origin} yet: is `wakeful run` running? "
                "It writes the token at its first start; give the CLI the daemon's config (-c)",
                exit_code=1,
            )
        return cls(found.url, found.token, found.token_origin)

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

    def get_json_if_served(self, path: str) -> dict[str, Any] | None:
        """Like get_json; None when the daemon serves no such path (a part not configured)."""
        response = self._send_request("GET", path)
        if response.status_code == 404:
            return None
        self._check(response)
        data = self._json(response)
        if not isinstance(data, dict):
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
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

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
        path = f"/api/sessions/{self.segment(session)}/stream"
        connection = http.client.HTTPConnection(self._host, self._port, timeout=CONNECT_TIMEOUT_S)
        try:
            try:
                connection.request("GET", path, headers=self._headers())
                assert connection.sock is not None  # connected by request()
                connection.sock.settimeout(read)
                self._stream_socket = connection.sock
                response = connection.getresponse()
                if response.status != 200:
                    self._check(Response(response.status, _decoded(response.read())))
                lines = _lines(response)
                next(lines, None)  # the ": ready" comment: subscribed
                yield _sse_items(lines, deadline)
            except TimeoutError:
                raise CliError("timed out waiting for the agent's run to finish") from None
            except (OSError, http.client.HTTPException) as exc:
                raise self._unreachable(exc) from None
        finally:
            self._stream_socket = None
            connection.close()

    def _headers(self, body: bytes | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return headers

    def _request(self, method: str, path: str, **kwargs: Any) -> Response:
        response = self._send_request(method, path, **kwargs)
        self._check(response)
        return response

    def _send_request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> Response:
        target = f"{path}?{urlencode(params)}" if params else path
        body = None if json is None else _dumps(json)
        connection = self._open_connection()
        try:
            connection.request(method, target, body=body, headers=self._headers(body))
            answer = connection.getresponse()
            response = Response(answer.status, _decoded(answer.read()))
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            self._connection = None
            raise self._unreachable(exc) from None
        if answer.will_close:
            connection.close()
            self._connection = None
        return response

    def _open_connection(self) -> http.client.HTTPConnection:
        """The kept-alive connection, unless the daemon closed it since (its idle timeout).

        Checked before the request, never retried after: a request the daemon may have
        acted on (a message sent) is not sent twice.
        """
        connection = self._connection
        if connection is not None and connection.sock is not None:
            readable, _, _ = select.select([connection.sock], [], [], 0)
            if readable:  # an idle keep-alive socket is readable only once closed
                connection.close()
                connection = None
        if connection is None:
            connection = http.client.HTTPConnection(
                self._host, self._port, timeout=REQUEST_TIMEOUT_S
            )
            self._connection = connection
        return connection

    def _unreachable(self, exc: Exception) -> CliError:
        return CliError(
            f"cannot reach the daemon at {self.url} — is `wakeful run` running? "
            f"({type(exc).__name__})"
        )

    def _check(self, response: Response) -> None:
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
    def _json(response: Response) -> dict[str, Any]:
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


def _lines(response: http.client.HTTPResponse) -> Iterator[str]:
    """The body's lines without their line ends, as they arrive."""
    while True:
        raw = response.readline()
        if not raw:
            return
        yield raw.decode("utf-8", errors="replace").rstrip("\r\n")


def _decoded(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")
