"""`wakeful chat`: a terminal chat that streams replies and takes input during a run.

At start it shows the session's unread messages (replies to timers, shell
tasks, webhooks made while no chat was open) and acknowledges them, so the
next chat does not show them again. While it runs, a follower thread shows
the session's feed as it arrives — reply text as it streams, tool activity,
alerts, unprompted replies — while the prompt (wakeful.cli.chat_prompt)
keeps the line being typed intact. On a pipe it is a plain line mode: each
line is sent, its run's replies printed, then the next line is read.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from wakeful.cli.chat_screen import ChatScreen, message_line, tool_line
from wakeful.cli.client import CliError, DaemonClient

__all__ = ["ChatScreen", "Follower", "message_line", "run_chat"]

# The stream sends a heartbeat every 15 s; a silent minute means the daemon went away.
STREAM_READ_TIMEOUT_S = 60.0
RECONNECT_DELAY_S = 1.0


class Follower:
    """Follows the session's stream on its own thread; reconnects after a restart."""

    def __init__(self, client: DaemonClient, session: str, screen: ChatScreen) -> None:
        self._client = client
        self._session = session
        self._screen = screen
        self.subscribed = threading.Event()
        self.idle = threading.Event()
        self.running = threading.Event()  # a run is active: Ctrl-C interrupts it
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
        elif kind == "delta":
            self._screen.stream(str(item.get("delta", "")))
        elif kind == "discarded":
            self._screen.drop_stream(str(item.get("cause") or "the run was interrupted"))
        elif kind == "tool":
            line = tool_line(item)
            if line is not None:
                self._screen.note(line)
        elif kind in {"alert", "error"}:
            self._screen.note(f"[{kind}] {item.get('text') or item.get('message') or item}")
        elif kind == "run":
            self._track_run(item.get("state"))

    def _track_run(self, state: Any) -> None:
        if state == "busy":
            self.idle.clear()
            self.running.set()
        elif state == "idle":
            self._screen.end_stream()
            self.running.clear()
            self.idle.set()


def run_chat(client: DaemonClient, session: str, timeout_s: float, history: bool) -> int:
    terminal = sys.stdin.isatty() and sys.stdout.isatty()
    print(f"chatting in session {session!r}; Ctrl-D to quit, !stop or Ctrl-C to interrupt")
    screen = ChatScreen(client.clone(), session, terminal=terminal)
    if history:
        screen.show(client.outbox(session, unread=False))
    follower = Follower(client.clone(), session, screen)
    try:
        if terminal:
            # Imported here: prompt_toolkit is only needed on a terminal.
            from wakeful.cli.chat_prompt import TerminalChat

            return TerminalChat(client, session, screen, follower, model=timeout_s > 0).run()
        return _plain_chat(client, session, timeout_s, follower)
    finally:
        screen.settle()  # a message on the screen is acknowledged before the chat ends


def start_following(client: DaemonClient, session: str, follower: Follower) -> None:
    follower.start()
    if not follower.subscribed.wait(10):
        follower.stop()
        raise CliError(f"cannot follow session {session!r} at {client.url}")


def _plain_chat(client: DaemonClient, session: str, timeout_s: float, follower: Follower) -> int:
    start_following(client, session, follower)
    try:
        for raw in sys.stdin:
            line = raw.strip()
            if line:
                _send_and_wait(client, session, line, timeout_s, follower)
        return 0
    finally:
        follower.stop()


def _send_and_wait(
    client: DaemonClient, session: str, line: str, timeout_s: float, follower: Follower
) -> None:
    follower.idle.clear()
    try:
        client.send(session, line, message_kind(line))
    except CliError as exc:
        print(f"wakeful: {exc}", file=sys.stderr)
        return
    # No model (timeout 0): nothing will run, so there is no end of a run to wait for.
    if timeout_s > 0 and not follower.idle.wait(timeout_s):
        print("wakeful: timed out waiting for the agent's run to finish", file=sys.stderr)


def message_kind(line: str) -> str:
    return "user.interrupt" if line.startswith("!stop") else "user.input"
