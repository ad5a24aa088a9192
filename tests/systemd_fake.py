"""Playing systemd's side of sd_notify: a datagram socket that records what arrives."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType


@dataclass(frozen=True)
class Notification:
    at: float  # time.monotonic() when received
    fields: dict[str, str]


class NotifySocket:
    """An abstract AF_UNIX datagram socket (``@name``) collecting notifications in a thread."""

    def __init__(self, on_message: Callable[[Notification], None] | None = None) -> None:
        self.address = f"@wakeful-test-{uuid.uuid4().hex}"
        self.messages: list[Notification] = []
        self._on_message = on_message
        self._cond = threading.Condition()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind("\0" + self.address[1:])
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if line)
            note = Notification(time.monotonic(), fields)
            if self._on_message is not None:
                self._on_message(note)
            with self._cond:
                self.messages.append(note)
                self._cond.notify_all()

    def wait_for(self, key: str, timeout_s: float = 20.0, count: int = 1) -> Notification:
        """The count-th notification carrying ``key``."""

        def found() -> list[Notification]:
            return [m for m in self.messages if key in m.fields]

        with self._cond:
            if not self._cond.wait_for(lambda: len(found()) >= count, timeout_s):
                raise TimeoutError(f"no {key} notification #{count} in {timeout_s} s")
            return found()[count - 1]

    def with_key(self, key: str) -> list[Notification]:
        with self._cond:
            return [m for m in self.messages if key in m.fields]

    def __enter__(self) -> NotifySocket:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._sock.close()
