"""A fake signal-cli daemon (``signal-cli -a +NUMBER daemon --http``) on real HTTP (loopback).

It follows signal-cli-jsonrpc(5) and signal-cli's HTTP server:

- ``POST /api/v1/rpc``: one JSON-RPC 2.0 request (415 without a JSON content
  type, 405 for another method); always HTTP 200 with the response, a refusal
  in ``error`` with signal-cli's codes: -1 a user error, -3 an I/O error,
  -4 an untrusted identity key, -5 a rate limit (its data the send's results
  with ``retryAfterSeconds``), -32601 an unknown method, -32602 bad params.
  Methods: ``send`` (recipient list or groupId, message; answers the
  timestamp and per-recipient results), ``sendTyping``, ``sendReceipt``,
  ``version`` (``{"version": …}``). An ``account`` param naming another number
  is refused -32602 "Specified account does not exist", as a daemon serving
  several accounts refuses one it has not registered.
- ``GET /api/v1/events``: Server-Sent Events, ``id:<start time>-<n>``,
  ``event:receive``, ``data:{"envelope": …, "account": …}``, a ``:`` keep-alive
  comment when idle. The last 1000 events are kept; a ``Last-Event-ID`` of
  this run replays those after it, an unknown one (an earlier run's) replays
  all of them, none replays nothing.
- ``GET /api/v1/check``: 200 while up.

People are simulated with :meth:`FakeSignalCli.user_says` (a ``dataMessage``
envelope; said while the daemon is down it waits on "Signal's server" and
arrives when it is back) and :meth:`other_event` (receipts, typing).
:meth:`stop` takes the daemon down (streams cut, connections refused) and
:meth:`start` brings it back as a new run (new event ids, nothing kept, as a
restarted signal-cli); :meth:`fail` makes calls answer an error until
:meth:`recover`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope

from tests.fakes.loopback_http import LoopbackHttpServer, ServesWhileOpen
from tests.fakes.model_server import _read_body

ACCOUNT = "+15550001111"
MAX_EVENTS = 1000  # what signal-cli keeps for Last-Event-ID
VERSION = "0.13.22"  # what the fake says its signal-cli is (the version method)
Failure = Literal["ratelimit", "io", "untrusted", "user"]
_FAILURES: dict[str, tuple[int, str]] = {
    "ratelimit": (-5, "Failed to send message due to rate limiting"),
    "io": (-3, "Failed to send message: connection to the Signal server failed"),
    "untrusted": (-4, "Failed to send message due to untrusted identities"),
    "user": (-1, "Failed to send message: Unregistered user"),
}


@dataclass
class Sent:
    params: dict[str, Any]
    text: str
    timestamp: int
    received_at: float  # time.monotonic()

    @property
    def to(self) -> str:
        """The recipient, or ``group:<id>``."""
        if "groupId" in self.params:
            return f"group:{self.params['groupId']}"
        recipient = self.params.get("recipient")
        return str(recipient[0] if isinstance(recipient, list) else recipient)


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    error: int | None
    at: float


@dataclass
class _Failing:
    kind: Failure
    methods: frozenset[str]
    retry_after: int


@dataclass
class Person:
    number: str
    uuid: str
    name: str = "Owner"


@dataclass
class _Run:
    """One run of the daemon: its event ids and the events it keeps."""

    prefix: str
    events: list[tuple[int, str]] = field(default_factory=list)
    sequence: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


class FakeSignalCli(ServesWhileOpen):
    """One account's daemon; state is guarded by one condition shared with waiting tests."""

    def __init__(self, account: str = ACCOUNT, keepalive_s: float = 15.0) -> None:
        self.account = account
        self.keepalive_s = keepalive_s
        self.sent: list[Sent] = []
        self.typing: list[tuple[dict[str, Any], float]] = []
        self.receipts: list[dict[str, Any]] = []
        self.calls: list[Call] = []
        self.stream_opens: list[str | None] = []  # the Last-Event-ID of each stream opened
        self.open_streams = 0
        self.authorizations: set[str | None] = set()  # Authorization headers seen
        self.waiting: list[dict[str, Any]] = []  # said while down: held by "Signal's server"
        self._run = _Run(self._new_prefix())
        self._failing: _Failing | None = None
        self._cond = threading.Condition()
        self._clock = itertools.count(int(time.time() * 1000))  # distinct sender timestamps
        self._closing = False
        # Bound now, so a test can put the port in a config before starting.
        self._http: LoopbackHttpServer | None = LoopbackHttpServer(self, "fake signal-cli")
        self.port: int = self._http.port
        self.up = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def _new_prefix() -> str:
        return f"{time.time_ns()}-"

    # --- what people do ----------------------------------------------------

    def user_says(
        self,
        who: Person,
        text: str | None,
        *,
        group_id: str | None = None,
        attachments: list[dict[str, Any]] | None = None,
        hide_number: bool = False,
    ) -> dict[str, Any]:
        """A message from ``who``; returns its envelope (``timestamp`` names it)."""
        timestamp = next(self._clock)
        data: dict[str, Any] = {
            "timestamp": timestamp,
            "message": text,
            "expiresInSeconds": 0,
            "viewOnce": False,
            "attachments": attachments or [],
        }
        if group_id is not None:
            data["groupInfo"] = {"groupId": group_id, "type": "DELIVER"}
        envelope: dict[str, Any] = {
            "source": who.uuid if hide_number else who.number,
            "sourceNumber": None if hide_number else who.number,
            "sourceUuid": who.uuid,
            "sourceName": who.name,
            "sourceDevice": 1,
            "timestamp": timestamp,
            "dataMessage": data,
        }
        self.deliver(envelope)
        return envelope

    def other_event(self, who: Person, kind: str) -> dict[str, Any]:
        """A receipt (``receiptMessage``) or a typing notice (``typingMessage``)."""
        timestamp = next(self._clock)
        body = (
            {"when": timestamp, "isDelivery": True, "isRead": False, "timestamps": [timestamp]}
            if kind == "receiptMessage"
            else {"action": "STARTED", "timestamp": timestamp}
        )
        envelope = {
            "source": who.number,
            "sourceNumber": who.number,
            "sourceUuid": who.uuid,
            "sourceDevice": 1,
            "timestamp": timestamp,
            kind: body,
        }
        self.deliver(envelope)
        return envelope

    def deliver(self, envelope: dict[str, Any]) -> None:
        """An envelope from Signal's server: an event now, or once the daemon is up."""
        with self._cond:
            if self.up:
                self._add_event(envelope)
            else:
                self.waiting.append(envelope)
            self._cond.notify_all()

    def _add_event(self, envelope: dict[str, Any]) -> None:
        data = json.dumps({"envelope": envelope, "account": self.account})
        self._run.events.append((next(self._run.sequence), data))
        del self._run.events[:-MAX_EVENTS]

    # --- failing on purpose ------------------------------------------------

    def fail(self, kind: Failure, *, methods: set[str] | None = None, retry_after: int = 1) -> None:
        """Make ``methods`` (``send`` when None) answer ``kind``'s error until :meth:`recover`."""
        with self._cond:
            self._failing = _Failing(kind, frozenset(methods or {"send"}), retry_after)

    def recover(self) -> None:
        with self._cond:
            self._failing = None

    # --- waiting ------------------------------------------------------------

    def wait_for(self, condition: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
        with self._cond:
            if not self._cond.wait_for(condition, timeout_s):
                raise TimeoutError(f"{what} not reached within {timeout_s} s")

    def wait_for_sent(self, n: int, timeout_s: float = 10.0) -> list[Sent]:
        self.wait_for(lambda: len(self.sent) >= n, timeout_s, f"{n} sent ({len(self.sent)})")
        with self._cond:
            return list(self.sent)

    async def until(self, condition: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
        """:meth:`wait_for` from async code, without blocking its event loop."""
        await anyio.to_thread.run_sync(
            self.wait_for, condition, timeout_s, what, abandon_on_cancel=True
        )

    async def await_sent(self, n: int, timeout_s: float = 10.0) -> list[Sent]:
        return await anyio.to_thread.run_sync(
            self.wait_for_sent, n, timeout_s, abandon_on_cancel=True
        )

    def sent_to(self, address: str) -> list[Sent]:
        with self._cond:
            return [s for s in self.sent if s.to == address]

    # --- ASGI ---------------------------------------------------------------

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        authorization = dict(scope["headers"]).get(b"authorization")
        with self._cond:
            self.authorizations.add(authorization.decode() if authorization else None)
        if path == "/api/v1/events":
            if method != "GET":
                await _send(send, 405, b"")
                return
            await self._events(scope, receive, send)
            return
        if path == "/api/v1/check":
            await _send(send, 200 if method == "GET" else 405, b"")
            return
        if path != "/api/v1/rpc":
            await _send(send, 404, b"")
            return
        raw = await _read_body(receive)
        if method != "POST":
            await _send(send, 405, b"")
            return
        headers = dict(scope["headers"])
        if not headers.get(b"content-type", b"").startswith(b"application/json"):
            await _send(send, 415, b"")
            return
        await _send(send, 200, json.dumps(self._rpc(raw)).encode(), b"application/json")

    def _rpc(self, raw: bytes) -> dict[str, Any]:
        try:
            request = json.loads(raw)
        except ValueError:
            return _error(None, -32700, "Parse error")
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            return _error(None, -32600, "method field must be set")
        rid, method = request.get("id"), request["method"]
        params = request.get("params") or {}
        if not isinstance(params, dict):
            return _error(rid, -32602, "params must be an object")
        with self._cond:
            failing = self._failing
            if failing is not None and method in failing.methods:
                code, message = _FAILURES[failing.kind]
                self.calls.append(Call(method, params, code, time.monotonic()))
                self._cond.notify_all()  # a test may be waiting for the failed call
                data = None
                if failing.kind == "ratelimit":
                    results = [{"type": "RATE_LIMIT_FAILURE",
                                "retryAfterSeconds": failing.retry_after}]  # fmt: skip
                    data = {"response": {"timestamp": next(self._clock), "results": results}}
                return _error(rid, code, message, data)
            try:
                result = self._dispatch(method, params)
            except _RpcError as exc:
                self.calls.append(Call(method, params, exc.code, time.monotonic()))
                self._cond.notify_all()
                return _error(rid, exc.code, exc.message)
            self.calls.append(Call(method, params, None, time.monotonic()))
            self._cond.notify_all()
        return {"jsonrpc": "2.0", "result": result, "id": rid}

    def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if "account" in params and params["account"] != self.account:
            raise _RpcError(-32602, "Specified account does not exist")
        if method == "send":
            return self._send_message(params)
        if method == "sendTyping":
            _recipients(params)
            self.typing.append((params, time.monotonic()))
            return {"timestamp": next(self._clock), "results": []}
        if method == "version":  # signal-cli's VersionCommand: {"version": …}
            return {"version": VERSION}
        if method == "sendReceipt":
            if not params.get("recipient") or not params.get("targetTimestamp"):
                raise _RpcError(-32602, "recipient and targetTimestamp are required")
            self.receipts.append(params)
            return {}
        raise _RpcError(-32601, "Method not implemented")

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        recipients = _recipients(params)
        text = params.get("message")
        if not isinstance(text, str) or not text:
            raise _RpcError(-1, "Message is empty")
        timestamp = next(self._clock)
        self.sent.append(Sent(params, text, timestamp, time.monotonic()))
        results = [{"recipientAddress": {"number": r}, "type": "SUCCESS"} for r in recipients]
        return {"timestamp": timestamp, "results": results}

    async def _events(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        headers = dict(scope["headers"])
        last = headers.get(b"last-event-id")
        last_id = last.decode() if last is not None else None
        with self._cond:
            run = self._run
            self.stream_opens.append(last_id)
            self.open_streams += 1
            self._cond.notify_all()
            if last_id is None:
                after = run.events[-1][0] if run.events else 0  # only what comes next
            elif last_id.startswith(run.prefix) and last_id[len(run.prefix) :].isdigit():
                after = int(last_id[len(run.prefix) :])
            else:
                after = 0  # unknown (an earlier run's): everything kept
        start = {"type": "http.response.start", "status": 200,
                 "headers": [(b"content-type", b"text/event-stream")]}  # fmt: skip
        await send(start)
        try:
            async with anyio.create_task_group() as group:

                async def until_gone() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(until_gone)
                while True:
                    batch = await anyio.to_thread.run_sync(
                        self._events_after, run, after, abandon_on_cancel=True
                    )
                    if batch is None:
                        break
                    chunk = "".join(
                        f"id:{run.prefix}{n}\nevent:receive\ndata:{data}\n\n" for n, data in batch
                    )
                    await send({"type": "http.response.body", "body": (chunk or ":\n").encode(),
                                "more_body": True})  # fmt: skip
                    after = batch[-1][0] if batch else after
                group.cancel_scope.cancel()
        finally:
            with self._cond:
                self.open_streams -= 1
                self._cond.notify_all()

    def _events_after(self, run: _Run, after: int) -> list[tuple[int, str]] | None:
        """The events of ``run`` after ``after`` (empty: time for a keep-alive); None once
        this run is over."""
        with self._cond:
            self._cond.wait_for(
                lambda: (
                    self._closing
                    or self._run is not run
                    or bool(run.events and run.events[-1][0] > after)
                ),
                self.keepalive_s,
            )
            if self._closing or self._run is not run:
                return None
            return [(n, data) for n, data in run.events if n > after]

    # --- lifecycle ----------------------------------------------------------

    def start(self) -> FakeSignalCli:
        """Up (again): a new run, as a restarted signal-cli — new ids, nothing kept — that
        first receives what Signal's server held while it was down."""
        with self._cond:
            self._closing = False
            if self.up:
                raise RuntimeError("the fake signal-cli is up already")
            self._run = _Run(self._new_prefix())
            self.up = True
            for envelope in self.waiting:
                self._add_event(envelope)
            self.waiting.clear()
            self._cond.notify_all()
        if self._http is None:  # the port it had, as a restarted daemon binds it again
            self._http = LoopbackHttpServer(self, "fake signal-cli", port=self.port)
        self._http.start()
        return self

    def stop(self) -> None:
        """Down: streams cut, connections refused; what people say waits for :meth:`start`."""
        with self._cond:
            self._closing = True
            self.up = False
            self._cond.notify_all()
        if self._http is not None:
            self._http.close()
            self._http = None

    def close(self) -> None:
        self.stop()


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _recipients(params: dict[str, Any]) -> list[str]:
    if isinstance(params.get("groupId"), str):
        return [params["groupId"]]
    recipient = params.get("recipient")
    recipients = recipient if isinstance(recipient, list) else [recipient] if recipient else []
    if not recipients or not all(isinstance(r, str) for r in recipients):
        raise _RpcError(-1, "No recipients given")
    return recipients


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": data}, "id": rid}


async def _send(
    send: ASGISendCallable, status: int, body: bytes, content_type: bytes = b"text/plain"
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class FakeSignalCliSocket(FakeSignalCli):
    """``daemon --tcp --receive-mode manual`` (or ``--socket`` with ``unix_path``):
    newline-delimited JSON-RPC both ways on each connection. Nothing is fetched from
    "Signal's server" until a connection calls ``subscribeReceive``; then each new event
    goes to every subscribed connection as a ``receive`` notification wrapped in the
    subscription (``{"subscription": 0, "result": {"envelope": …}}``), without ids."""

    def __init__(self, account: str = ACCOUNT, unix_path: Path | None = None) -> None:
        super().__init__(account)
        if self._http is not None:  # the HTTP port the base class reserved: not served here
            self._http.close()
            self._http = None
        self.unix_path = unix_path
        self.subscribers = 0
        self._listener: socket.socket | None = None
        self._connections: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._listener = self._bind()

    def _bind(self) -> socket.socket:
        if self.unix_path is not None:
            self.unix_path.unlink(missing_ok=True)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(self.unix_path))
        else:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", getattr(self, "port", 0)))
            self.port = listener.getsockname()[1]
        return listener

    @property
    def base_url(self) -> str:
        if self.unix_path is not None:
            return f"unix://{self.unix_path}"
        return f"tcp://127.0.0.1:{self.port}"

    def deliver(self, envelope: dict[str, Any]) -> None:
        with self._cond:
            if self.up and self.subscribers > 0:
                self._add_event(envelope)
            else:
                self.waiting.append(envelope)  # manual mode: still on Signal's server
            self._cond.notify_all()

    def start(self) -> FakeSignalCliSocket:
        with self._cond:
            if self.up:
                raise RuntimeError("the fake signal-cli is up already")
            self._closing = False
            self._run = _Run(self._new_prefix())
            self.up = True
        if self._listener is None:
            self._listener = self._bind()
        self._listener.listen()
        self._spawn(self._accept, self._listener)
        return self

    def stop(self) -> None:
        with self._cond:
            self._closing = True
            self.up = False
            connections, self._connections = self._connections, []
            self._cond.notify_all()
        for sock in [self._listener, *connections]:
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self._listener = None
        for thread in self._threads:
            thread.join(timeout=10.0)
        self._threads.clear()

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="fake-signal-cli")
        self._threads.append(thread)
        thread.start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # stopped
            with self._cond:
                if self._closing:
                    connection.close()
                    return
                self._connections.append(connection)
            self._spawn(self._serve, connection)

    def _serve(self, connection: socket.socket) -> None:
        write = threading.Lock()
        alive = threading.Event()
        alive.set()
        subscribed = False
        try:
            for raw in connection.makefile("rb"):
                request = _json_or_none(raw)
                if isinstance(request, dict) and request.get("method") == "subscribeReceive":
                    subscribed = True
                    self._spawn(self._push, connection, write, alive, self._subscribe())
                    answer: dict[str, Any] = {
                        "jsonrpc": "2.0",
                        "result": 0,
                        "id": request.get("id"),
                    }
                else:
                    answer = self._rpc(raw)
                with write:
                    connection.sendall((json.dumps(answer) + "\n").encode())
        except OSError:
            pass  # cut off by stop(), or the client went away
        finally:
            alive.clear()
            with self._cond:
                if subscribed:
                    self.subscribers -= 1
                    self.open_streams -= 1
                self._cond.notify_all()

    def _subscribe(self) -> int:
        """The daemon starts fetching: what waited on Signal's server becomes events."""
        with self._cond:
            self.subscribers += 1
            self.open_streams += 1
            self.stream_opens.append(None)
            after = self._run.events[-1][0] if self._run.events else 0
            for envelope in self.waiting:
                self._add_event(envelope)
            self.waiting.clear()
            self._cond.notify_all()
            return after

    def _push(
        self, connection: socket.socket, write: threading.Lock, alive: threading.Event, after: int
    ) -> None:
        run = self._run
        while alive.is_set():
            batch = self._events_after(run, after)
            if batch is None:
                return
            for n, data in batch:
                params = {"subscription": 0, "result": json.loads(data)}
                line = json.dumps({"jsonrpc": "2.0", "method": "receive", "params": params})
                try:
                    with write:
                        connection.sendall((line + "\n").encode())
                except OSError:
                    return
                after = n


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
