"""`wakeful chat`: a terminal chat that also shows what the agent said unprompted.

At start it shows the session's unread messages (replies to timers, shell
tasks, webhooks made while no chat was open) and acknowledges them, so the
next chat does not show them again. While it runs, a follower thread prints
every message as it arrives — also between prompts — and acknowledges it.
Messages are told apart by their outbox id, so none is printed twice.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from wakeful.daemon.cli_client import CliError, DaemonClient

# The stream sends a heartbeat every 15 s; a silent minute means the daemon went away.
STREAM_READ_TIMEOUT_S = 60.0
RECONNECT_DELAY_S = 1.0
PROMPT = "you> "


class ChatScreen:
    """What has been shown, so each message is printed (and acknowledged) once."""

    def __init__(self, client: DaemonClient, session: str) -> None:
        self._client = client
        self._session = session
        self._shown: set[int] = set()
        self._lock = threading.Lock()
        self.at_prompt = False

    def show(self, messages: list[dict[str, Any]], *, acknowledge: bool = True) -> None:
        with self._lock:
            # An item without an outbox id (an older daemon) cannot be told apart: shown.
            fresh = [m for m in messages if m.get("id") not in self._shown]
            for message in fresh:
                if isinstance(message.get("id"), int):
                    self._shown.add(message["id"])
                self._print(message_line(message))
        ids = tuple(m["id"] for m in fresh if isinstance(m.get("id"), int))
        if ids and acknowledge:
            self._client.acknowledge(self._session, ids=ids)

    def show_unread(self) -> None:
        self.show(self._client.outbox(self._session, unread=True))

    def note(self, text: str) -> None:
        with self._lock:
            self._print(text, stream=sys.stderr)

    def _print(self, text: str, stream: Any = None) -> None:
        # Between prompts the line is printed over the prompt, which is then redrawn.
        out = stream or sys.stdout
        print(("\r" if self.at_prompt else "") + text, file=out, flush=True)
        if self.at_prompt:
            print(PROMPT, end="", flush=True)


def message_line(message: dict[str, Any]) -> str:
    text = str(message.get("text", ""))
    if message.get("state") == "unknown":
        return f"{text}  [delivery unknown: the daemon stopped while sending it]"
    return text


class Follower:
    """Follows the session's stream on its own thread; reconnects after a restart."""

    def __init__(self, client: DaemonClient, session: str, screen: ChatScreen) -> None:
        self._client = client
        self._session = session
        self._screen = screen
        self.subscribed = threading.Event()
        self.idle = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chat-follower", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._client.close()  # ends the blocking read
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._follow_once()
            except (CliError, OSError, RuntimeError, ValueError) as exc:
                if self._stopping.is_set():
                    return
                self.subscribed.clear()
                self._screen.note(f"[reconnecting: {exc}]")
            self._stopping.wait(RECONNECT_DELAY_S)

    def _follow_once(self) -> None:
        deadline = time.monotonic() + 365 * 86400
        with self._client.stream(self._session, deadline, STREAM_READ_TIMEOUT_S) as items:
            # Subscribed first: whatever was said before is in the unread list now.
            self._screen.show_unread()
            self.subscribed.set()  # the prompt comes after what was unread
            for item in items:
                self._handle(item)

    def _handle(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "reply":
            self._screen.show([item])
        elif kind in {"alert", "error"}:
            self._screen.note(f"[{kind}] {item.get('text') or item.get('message') or item}")
        elif kind == "run" and item.get("state") == "idle":
            self.idle.set()


def run_chat(client: DaemonClient, session: str, timeout_s: float, history: bool) -> int:
    print(f"chatting in session {session!r}; Ctrl-D to quit, !stop to interrupt")
    screen = ChatScreen(client.clone(), session)
    if history:
        screen.show(client.outbox(session, unread=False))
    follower = Follower(client.clone(), session, screen)
    follower.start()
    if not follower.subscribed.wait(10):
        follower.stop()
        raise CliError(f"cannot follow session {session!r} at {client.url}")
    try:
        return _prompt_loop(client, session, timeout_s, screen, follower)
    finally:
        follower.stop()


def _prompt_loop(
    client: DaemonClient, session: str, timeout_s: float, screen: ChatScreen, follower: Follower
) -> int:
    while True:
        screen.at_prompt = True
        try:
            line = input(PROMPT).strip()
        except EOFError:
            print()
            return 0
        finally:
            screen.at_prompt = False
        if not line:
            continue
        kind = "user.interrupt" if line.startswith("!stop") else "user.input"
        follower.idle.clear()
        try:
            client.send(session, line, kind)
        except CliError as exc:
            print(f"wakeful: {exc}", file=sys.stderr)
            continue
        # No model (timeout 0): nothing will run, so there is no end of a run to wait for.
        if timeout_s > 0 and not follower.idle.wait(timeout_s):
            print("wakeful: timed out waiting for the agent's run to finish", file=sys.stderr)
