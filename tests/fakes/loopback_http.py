"""An ASGI app served by uvicorn on a loopback port, in a thread of its own.

The fake model server, the fake Bot API and the fake Slack API are each one of
these: the port is bound at construction (so a test can put it in a config
before starting), ``start`` returns once uvicorn listens, and ``close`` stops at
once, cutting off hanging streams — the point of a fake's teardown.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.from_thread
import anyio.lowlevel
import uvicorn


class _Uvicorn(uvicorn.Server):
    """uvicorn that says when it is listening and stops when told, not on its next poll."""

    def __init__(self, config: uvicorn.Config, started: threading.Event) -> None:
        super().__init__(config)
        self._started = started
        self._stop: anyio.Event | None = None
        self._token: anyio.lowlevel.EventLoopToken | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._stop = anyio.Event()
        self._token = anyio.lowlevel.current_token()
        await super().startup(sockets)
        self._started.set()

    async def main_loop(self) -> None:
        # uvicorn polls should_exit every 0.1 s; waiting on an event makes
        # teardown of each test's server that much faster.
        if self._stop is not None and not self.should_exit:
            await self._stop.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # uvicorn's own shutdown sleeps 0.1 s for connections to drain; a fake
        # has nothing worth draining, and cutting hanging streams is the point.
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        for task in list(self.server_state.tasks):
            task.cancel()

    def stop(self) -> None:
        """Ask for an immediate shutdown; safe from any thread."""
        self.should_exit = True
        self.force_exit = True  # don't wait for hanging streams
        if self._stop is None or self._token is None:
            return
        with contextlib.suppress(RuntimeError):  # the server's loop already finished
            anyio.from_thread.run_sync(self._stop.set, token=self._token)


class LoopbackHttpServer:
    """``app`` on ``127.0.0.1:port`` (0: any free port, known as soon as this is built)."""

    def __init__(self, app: Any, name: str, port: int = 0) -> None:
        self._app = app
        self._name = name
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self.port: int = self._socket.getsockname()[1]
        self._server: _Uvicorn | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        started = threading.Event()
        # log_config=None: uvicorn must not reconfigure the test process's logging.
        config = uvicorn.Config(
            self._app, lifespan="off", log_config=None, log_level=None, access_log=False,
            http="h11",
        )  # fmt: skip
        self._server = _Uvicorn(config, started)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name=f"{self._name}-{self.port}",
            daemon=True,
        )
        self._thread.start()
        if not started.wait(10.0):
            self.close()
            raise RuntimeError(f"the {self._name} did not start within 10 s")

    def close(self) -> None:
        """Stop at once; open streams, even hanging ones, are cut off."""
        if self._server is not None:
            self._server.stop()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
            self._thread = None
        self._socket.close()


class ServesWhileOpen:
    """``with Fake() as fake:`` for a fake with ``start()`` and ``close()``."""

    def start(self) -> Any: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
