"""A client for the fake model server running as a child process (tests/fakes/control_server.py).

    async with RemoteFakeModelServer(responder="bench.responders:cancel") as server:
        await server.push(Reply(text="hello"))
        ...  # point the daemon at server.base_url
        await server.await_requests(1)

Waiting uses the server's long-poll endpoint, so nothing here polls. Records
come back as `RecordedRequest`s; their `body` is `{}` unless it was asked for.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio.to_thread
import httpx

from tests.fakes.model_replies import Reply, reply_to_json
from tests.fakes.model_server import RecordedRequest

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
STARTUP_TIMEOUT_S = 20.0


def _record(fields: dict[str, Any]) -> RecordedRequest:
    return RecordedRequest(
        body=fields["body"] or {},
        received_at=fields["received_at"],
        index=fields["index"],
        headers=fields["headers"],
        aborted=fields["aborted"],
        completed=fields["completed"],
        aborted_at=fields["aborted_at"],
    )


class RemoteFakeModelServer:
    """Starts `python -m tests.fakes.control_server` and drives it over HTTP."""

    def __init__(self, *, responder: str = "text", port: int = 0) -> None:
        self._command = [
            sys.executable,
            "-m",
            "tests.fakes.control_server",
            "--port",
            str(port),
            "--responder",
            responder,
        ]
        self._process: subprocess.Popen[str] | None = None
        self._client: httpx.AsyncClient | None = None
        self.base_url = ""

    @property
    def pid(self) -> int:
        assert self._process is not None, "the server is not running"
        return self._process.pid

    async def __aenter__(self) -> RemoteFakeModelServer:
        try:
            with anyio.fail_after(STARTUP_TIMEOUT_S):
                line = await anyio.to_thread.run_sync(self._spawn, abandon_on_cancel=True)
            if not line.startswith("http://"):
                raise RuntimeError(f"the fake model server printed {line!r}, not its URL")
        except BaseException:
            self._stop()
            raise
        self.base_url = line
        control_url = line.removesuffix("/v1")
        self._client = httpx.AsyncClient(base_url=control_url, timeout=None)
        return self

    def _spawn(self) -> str:
        """Start the child; its first line of output is its base URL."""
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self._process = subprocess.Popen(
            self._command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self._process.stdout is not None
        return self._process.stdout.readline().strip()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            if self._client is not None:
                await self._client.aclose()
            await anyio.to_thread.run_sync(self._stop)

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.send_signal(signal.SIGINT)  # main() exits its wait on KeyboardInterrupt
        try:
            process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    # --- control API -------------------------------------------------------

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        assert self._client is not None, "use `async with RemoteFakeModelServer()`"
        response = await self._client.request(method, f"/_control/{path}", **kwargs)
        if response.status_code == 408:
            raise TimeoutError(response.json()["error"])
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer

    async def push(self, *replies: Reply) -> None:
        """Queue replies; each request takes the oldest, then falls back to the responder."""
        await self._call("POST", "push", json=[reply_to_json(r) for r in replies])

    async def use_responder(self, name: str) -> None:
        """A built-in responder, or `module:function` importable in the server process."""
        await self._call("POST", "responder", json={"name": name})

    async def reset(self) -> None:
        await self._call("POST", "reset")

    async def requests(self, after: int = 0, *, bodies: bool = False) -> list[RecordedRequest]:
        """The requests recorded from index `after` on (bodies only when asked: they are big)."""
        params = {"after": after, "bodies": int(bodies)}
        answer = await self._call("GET", "requests", params=params)
        return [_record(fields) for fields in answer["requests"]]

    async def count(self) -> int:
        """How many requests have arrived (cheaper than fetching them)."""
        answer = await self._call("GET", "requests", params={"after": sys.maxsize})
        return int(answer["count"])

    async def violations(self) -> list[str]:
        answer = await self._call("GET", "violations")
        return list(answer["violations"])

    async def _wait(self, timeout_s: float, **condition: Any) -> dict[str, Any] | None:
        params = {**condition, "timeout": timeout_s}
        with anyio.fail_after(timeout_s + 5.0):  # the server answers 408 first
            answer = await self._call("GET", "wait", params=params)
        request: dict[str, Any] | None = answer["request"]
        return request

    async def await_requests(self, n: int, timeout_s: float = 5.0) -> None:
        """Until at least `n` requests have arrived."""
        await self._wait(timeout_s, requests=n)

    async def await_end(self, index: int, timeout_s: float = 5.0) -> RecordedRequest:
        """Until request `index` was aborted or completed; that record."""
        fields = await self._wait(timeout_s, ended=index)
        assert fields is not None
        return _record(fields)

    async def await_abort(self, index: int, timeout_s: float = 5.0) -> RecordedRequest:
        """Until request `index` was abandoned by its client; raises if it completed instead."""
        record = await self.await_end(index, timeout_s)
        if not record.aborted:
            raise AssertionError(f"request {index} completed, not aborted")
        return record

    async def await_containing(
        self, needle: str, after: int = 0, timeout_s: float = 5.0
    ) -> RecordedRequest:
        """The first request from index `after` on whose messages contain `needle` (with body)."""
        fields = await self._wait(timeout_s, contains=needle, after=after)
        assert fields is not None
        return _record(fields)

    async def await_quiet(self, quiet_s: float = 0.2, timeout_s: float = 10.0) -> None:
        """Until no request is open and none arrived for `quiet_s`."""
        await self._wait(timeout_s, quiet=quiet_s)
