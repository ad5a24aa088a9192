"""The follower of `wakeful chat`: the session's feed, shown as it arrives.

It runs on a thread of its own, beside whichever way lines are typed (the plain
line mode of :mod:`wakeful.cli.chat`, the prompt of :mod:`wakeful.cli.chat_prompt`):
reply text as it streams, tool activity, alerts, unprompted replies, and whether
a run is going (so Ctrl-C knows to interrupt it). Both typing modes use it and
the same meaning of a typed line (:func:`message_kind`), so it is theirs, not
either one's.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from wakeful.cli.chat_screen import ChatScreen, tool_line
from wakeful.cli.client import CliError, DaemonClient

# The stream sends a heartbeat every 15 s; a silent minute means the daemon went away.
STREAM_READ_TIMEOUT_S = 60.0
RECONNECT_DELAY_S = 1.0
# Items that end a model call or start a new one: deltas after them are a call's start.
CALL_BOUNDARIES = frozenset({"reply", "discarded", "tool", "run"})


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
        self._outage = False  # "[reconnecting]" was said: "[reconnected]" is due
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
                cause = "the daemon closed the stream"
            except (CliError, OSError, RuntimeError, ValueError) as exc:
                cause = str(exc)
            if self._stopping.is_set():
                return
            self._screen.lost_connection()
            if not self._outage:  # once per outage, not once per attempt
                self._screen.note(f"[reconnecting: {cause}]")
                self._outage = True
            self.subscribed.clear()
            self._stopping.wait(RECONNECT_DELAY_S)

    def _follow_once(self) -> None:
        deadline = time.monotonic() + 365 * 86400
        with self._client.stream(self._session, deadline, STREAM_READ_TIMEOUT_S) as items:
            # Subscribed first: whatever was said before is in the unread list now.
            self._screen.show_unread()
            if self._outage:
                self._screen.note("[reconnected]")
                self._outage = False
            self.subscribed.set()  # the prompt comes after what was unread
            for item in items:
                self._handle(item)

    def _handle(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind in CALL_BOUNDARIES:
            self._screen.call_over()
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


def start_following(client: DaemonClient, session: str, follower: Follower) -> None:
    follower.start()
    if not follower.subscribed.wait(10):
        follower.stop()
        raise CliError(f"cannot follow session {session!r} at {client.url}")


def message_kind(line: str) -> str:
    return "user.interrupt" if line.startswith("!stop") else "user.input"
