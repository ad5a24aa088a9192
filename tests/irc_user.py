"""A person on IRC, for the tests: a raw-socket client with a reader thread.

Written independently of wakeful's protocol code (a line is split here by hand),
so a test does not check wakeful's parser against itself. Blocking by design:
the SIGKILL test drives it from plain threads; async tests wrap the waits in
``anyio.to_thread``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Said:
    sender: str  # nick
    prefix: str  # nick!user@host
    target: str  # a channel, or our nick for a private message
    text: str
    command: str = "PRIVMSG"
    received_at: float = 0.0


class IrcUser:
    def __init__(self, port: int, nick: str, username: str | None = None) -> None:
        self.nick = nick
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.settimeout(None)
        self.lines: list[str] = []
        self.said: list[Said] = []
        self._changed = threading.Condition()
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.send(f"NICK {nick}")
        self.send(f"USER {username or nick} 0 * :{nick} in a test")
        self.wait_line(lambda line: f" 001 {nick} " in line, what="welcome")

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\r\n")

    def say(self, target: str, text: str) -> None:
        self.send(f"PRIVMSG {target} :{text}")

    def join(self, channel: str) -> None:
        self.send(f"JOIN {channel}")
        self.wait_line(lambda line: f" 366 {self.nick} {channel} " in line, what=f"join {channel}")

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                with self._changed:
                    self._closed = True
                    self._changed.notify_all()
                return
            buffer += chunk
            while b"\r\n" in buffer:
                raw, buffer = buffer.split(b"\r\n", 1)
                self._take(raw.decode("utf-8", errors="replace"))

    def _take(self, line: str) -> None:
        if line.startswith("PING"):
            self.send("PONG" + line[4:])
        said = None
        if line.startswith(":"):
            prefix, _, rest = line[1:].partition(" ")
            command, _, rest = rest.partition(" ")
            if command in ("PRIVMSG", "NOTICE") and " :" in rest:
                target, _, text = rest.partition(" :")
                sender = prefix.split("!", 1)[0]
                said = Said(sender, prefix, target, text, command, time.monotonic())
        with self._changed:
            self.lines.append(line)
            if said is not None:
                self.said.append(said)
            self._changed.notify_all()

    def wait_line(
        self, predicate: Callable[[str], bool], timeout_s: float = 20.0, what: str = "a line"
    ) -> str:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                found = next((line for line in self.lines if predicate(line)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise TimeoutError(f"{self.nick}: no {what}; last lines: {self.lines[-5:]}")
                self._changed.wait(left)

    def wait_said(
        self, predicate: Callable[[list[Said]], bool], timeout_s: float = 20.0, what: str = ""
    ) -> list[Said]:
        """Until ``predicate`` holds over the messages received so far; those messages."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(list(self.said)):
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise TimeoutError(
                        f"{self.nick}: never {what or 'got that'}; received {self.said[-5:]}"
                    )
                self._changed.wait(left)
            return list(self.said)

    def from_(self, nick: str) -> list[Said]:
        with self._changed:
            return [s for s in self.said if s.sender == nick and s.command == "PRIVMSG"]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.send("QUIT :bye")
        self.sock.close()
        self._reader.join(5)

    def __enter__(self) -> IrcUser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
