"""The fake model server with an HTTP control API, to run in a process of its own.

Benchmarks run the fake server out of process so its request handling does not
compete with the daemon for the GIL. A Python callable cannot cross processes,
so the script is driven over HTTP (`tests/fakes/remote_model_server.py` is the
client):

* `POST /_control/push` — a JSON list of replies, in the `--script` format;
* `POST /_control/responder` — `{"name": ...}`: a built-in responder or a
  `module:function` importable in this process (see `resolve_responder`);
* `GET /_control/requests?after=N&bodies=1` — the recorded requests from N on,
  and the count of all;
* `GET /_control/violations`, `POST /_control/reset`;
* `GET /_control/wait?...&timeout=S` — a long poll that answers once a condition
  holds (408 on timeout): `requests=N` (N requests arrived), `ended=I` (request
  I aborted or completed), `contains=TEXT&after=N` (a request from N on whose
  messages contain TEXT), `quiet=S` (none open and none new for S seconds).

Monotonic stamps (`received_at`, `aborted_at`) are CLOCK_MONOTONIC, system-wide
on Linux, so they compare with the client process's `time.monotonic()`.

    python -m tests.fakes.control_server --port 0 [--script FILE] [--responder NAME]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any
from urllib.parse import parse_qs

import anyio.to_thread
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, HTTPScope

from tests.fakes.model_replies import Reply, load_script, replies_from_json, text_reply
from tests.fakes.model_server import FakeModelServer, RecordedRequest, _read_body, _send_json

Responder = Callable[[dict[str, Any]], Reply]
CONTROL_PREFIX = "/_control/"
BUILTIN_RESPONDERS: dict[str, Responder] = {"text": lambda _body: text_reply()}


def resolve_responder(name: str) -> Responder:
    """A built-in responder by name, or `package.module:function` imported here."""
    if name in BUILTIN_RESPONDERS:
        return BUILTIN_RESPONDERS[name]
    module_name, _, attribute = name.partition(":")
    if not attribute:
        known = ", ".join(sorted(BUILTIN_RESPONDERS))
        raise ValueError(f"unknown responder {name!r}: use one of {known} or 'module:function'")
    responder: Responder = getattr(importlib.import_module(module_name), attribute)
    return responder


def record_json(record: RecordedRequest, *, body: bool) -> dict[str, Any]:
    fields = asdict(record)
    if not body:
        fields["body"] = None
        fields["headers"] = {}
    return fields


class ControlledModelServer(FakeModelServer):
    """FakeModelServer whose script and records are reachable under /_control/."""

    async def _handle(
        self, scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if not scope["path"].startswith(CONTROL_PREFIX):
            await super()._handle(scope, receive, send)
            return
        route = (scope["method"], scope["path"][len(CONTROL_PREFIX) :].rstrip("/"))
        query = {k: v[-1] for k, v in parse_qs(scope["query_string"].decode()).items()}
        try:
            status, answer = await self._control(route, query, await _read_body(receive))
        except (ValueError, TypeError, KeyError, ImportError, AttributeError) as exc:
            status, answer = 400, {"error": f"bad control request {route}: {exc!r}"}
        await _send_json(send, status, answer)

    async def _control(
        self, route: tuple[str, str], query: dict[str, str], raw: bytes
    ) -> tuple[int, dict[str, Any]]:
        if route == ("POST", "push"):
            self.push(*replies_from_json(json.loads(raw)))
        elif route == ("POST", "responder"):
            self.responder = resolve_responder(str(json.loads(raw)["name"]))
        elif route == ("POST", "reset"):
            self.reset()
        elif route == ("GET", "violations"):
            with self._cond:
                return 200, {"violations": list(self.violations)}
        elif route == ("GET", "requests"):
            after, bodies = int(query.get("after", "0")), query.get("bodies") == "1"
            with self._cond:
                records = [record_json(r, body=bodies) for r in self.requests[after:]]
                count = len(self.requests)
            return 200, {"requests": records, "count": count}
        elif route == ("GET", "wait"):
            return await self._wait(query)
        else:
            return 404, {"error": f"no control route {route}"}
        return 200, {"ok": True}

    def reset(self) -> None:
        """Forget requests, violations and queued replies; back to the default responder."""
        with self._cond:
            self.requests = []
            self.violations = []
            self._queue.clear()
            self.responder = BUILTIN_RESPONDERS["text"]
            self._cond.notify_all()

    async def _wait(self, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        timeout_s = float(query.get("timeout", "5"))
        if "requests" in query:
            wait: Callable[[], RecordedRequest | bool | None] = self._waiter_requests(
                int(query["requests"])
            )
        elif "ended" in query:
            wait = self._waiter_ended(int(query["ended"]))
        elif "contains" in query:
            wait = self._waiter_contains(query["contains"], int(query.get("after", "0")))
        elif "quiet" in query:
            quiet_s = float(query["quiet"])
            wait = lambda: self._quiet_waiter(quiet_s, timeout_s)  # noqa: E731
        else:
            raise ValueError("wait needs one of requests=, ended=, contains=, quiet=")
        found = await anyio.to_thread.run_sync(self._wait_for, wait, timeout_s)
        if found is None:
            return 408, {"error": f"condition {query} not met within {timeout_s} s"}
        if isinstance(found, RecordedRequest):
            return 200, {"request": record_json(found, body=True)}
        return 200, {"request": None}

    def _wait_for(self, probe: Callable[[], Any], timeout_s: float) -> Any:
        """Under the condition lock: the probe's first non-None answer, or None on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while (found := probe()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return found

    def _waiter_requests(self, n: int) -> Callable[[], bool | None]:
        return lambda: True if len(self.requests) >= n else None

    def _waiter_ended(self, index: int) -> Callable[[], RecordedRequest | None]:
        def probe() -> RecordedRequest | None:
            if len(self.requests) > index:
                record = self.requests[index]
                return record if record.aborted or record.completed else None
            return None

        return probe

    def _waiter_contains(self, needle: str, after: int) -> Callable[[], RecordedRequest | None]:
        def probe() -> RecordedRequest | None:
            for record in self.requests[after:]:
                if needle in json.dumps(record.body.get("messages")):
                    return record
            return None

        return probe

    def _quiet_waiter(self, quiet_s: float, timeout_s: float) -> bool | None:
        """Called with the lock held: True once nothing is open and nothing new came for quiet_s."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(not (r.completed or r.aborted) for r in self.requests):
                self._cond.wait(min(quiet_s, max(0.0, deadline - time.monotonic())))
                continue
            if not self._cond.wait_for(self._count_changes(len(self.requests)), quiet_s):
                return True
        return None

    def _count_changes(self, seen: int) -> Callable[[], bool]:
        return lambda: len(self.requests) != seen


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the fake model server with /_control/.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="JSON file with a list of replies, served in order")
    parser.add_argument("--responder", default="text", help="built-in name or module:function")
    args = parser.parse_args()
    server = ControlledModelServer(args.port)
    server.responder = resolve_responder(args.responder)
    if args.script:
        server.push(*load_script(args.script))
    with server:
        print(server.base_url, flush=True)  # the client waits for this first line
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
