"""The fake model server for a benchmark: its own process (default) or a thread of ours.

In a thread, the fake's request handling competes with the daemon and the SDK
for this process's GIL, and every figure includes that; `--in-process` keeps
that mode for comparison. Both are driven through the same async interface
(`RemoteFakeModelServer`'s), and both stamp with CLOCK_MONOTONIC, which is
system-wide on Linux, so stamps compare with ours either way.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

import anyio

from tests.fakes.control_server import resolve_responder
from tests.fakes.model_server import FakeModelServer, RecordedRequest
from tests.fakes.remote_model_server import RemoteFakeModelServer


class ModelServer(Protocol):
    base_url: str

    async def requests(self, after: int = 0, *, bodies: bool = False) -> list[RecordedRequest]: ...
    async def count(self) -> int: ...
    async def violations(self) -> list[str]: ...
    async def await_requests(self, n: int, timeout_s: float = 5.0) -> None: ...
    async def await_abort(self, index: int, timeout_s: float = 5.0) -> RecordedRequest: ...
    async def await_containing(
        self, needle: str, after: int = 0, timeout_s: float = 5.0
    ) -> RecordedRequest: ...
    async def await_quiet(self, quiet_s: float = 0.2, timeout_s: float = 10.0) -> None: ...


class InThreadModelServer:
    """FakeModelServer (a thread of this process) behind RemoteFakeModelServer's interface."""

    def __init__(self, server: FakeModelServer) -> None:
        self.server = server
        self.base_url = server.base_url

    async def requests(self, after: int = 0, *, bodies: bool = False) -> list[RecordedRequest]:
        return self.server.requests[after:]

    async def count(self) -> int:
        return len(self.server.requests)

    async def violations(self) -> list[str]:
        return list(self.server.violations)

    async def await_requests(self, n: int, timeout_s: float = 5.0) -> None:
        await self.server.await_requests(n, timeout_s)

    async def await_abort(self, index: int, timeout_s: float = 5.0) -> RecordedRequest:
        return await self.server.await_abort(index, timeout_s)

    async def await_containing(
        self, needle: str, after: int = 0, timeout_s: float = 5.0
    ) -> RecordedRequest:
        with anyio.fail_after(timeout_s):
            while True:
                for record in self.server.requests[after:]:
                    if needle in json.dumps(record.body.get("messages")):
                        return record
                await self.server.await_requests(len(self.server.requests) + 1, timeout_s)

    async def await_quiet(self, quiet_s: float = 0.2, timeout_s: float = 10.0) -> None:
        """No new request for quiet_s and none open (sampled: this mode is for comparison)."""
        with anyio.fail_after(timeout_s):
            while True:
                seen = len(self.server.requests)
                await anyio.sleep(quiet_s)
                requests = self.server.requests
                if len(requests) == seen and all(r.completed or r.aborted for r in requests):
                    return


@asynccontextmanager
async def model_server(responder: str, *, in_process: bool) -> AsyncIterator[ModelServer]:
    """The fake server scripted by `responder` (a `module:function` name)."""
    if in_process:
        with FakeModelServer() as server:
            server.responder = resolve_responder(responder)
            yield InThreadModelServer(server)
        return
    async with RemoteFakeModelServer(responder=responder) as remote:
        yield remote


def add_server_flag(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the fake model server in a thread of this process (GIL shared, as before)",
    )
    return parser
