"""What `wakeful chat` (and `send --wait`) shows of a session's feed.

Each outbox message is printed (and acknowledged) once, told apart by its id.
A reply's text is shown as it streams: whole lines are printed as they end,
and so is each row that fills the terminal's width (broken at a space,
wakeful/cli/wrap.py); the unfinished row is kept in ``tail`` for the prompt to
draw above the line being typed. When the reply record arrives its text is already on screen, so
it is only acknowledged; when the daemon drops a partial stream, one dim line
says so. When the connection to the daemon breaks mid-stream, the partial text
is ended with a dim line too, and the stream of a model call that was already
under way when the chat reconnected is not shown (its start was missed): its
reply is printed whole when it comes.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable
from typing import Any

from wakeful.cli.client import DaemonClient
from wakeful.cli.wrap import fit, wrap

DIM, RESET = "\x1b[2m", "\x1b[0m"


def message_line(message: dict[str, Any]) -> str:
    text = str(message.get("text", ""))
    if message.get("state") == "unknown":
        return f"{text}  [delivery unknown: the daemon stopped while sending it]"
    return text


class ChatScreen:
    """What has been shown, so each message is printed (and acknowledged) once."""

    def __init__(self, client: DaemonClient, session: str, *, terminal: bool = False) -> None:
        self._client = client
        self._session = session
        self._terminal = terminal  # a tty: deltas are shown, notes are dim
        self._shown: set[int] = set()
        self._lock = threading.RLock()
        self._streamed = ""  # this model call's text so far
        self.tail = ""  # its unfinished last line, drawn by the prompt
        self._joined_late = False  # reconnected during a model call: its deltas are partial
        self.on_change: Callable[[], None] = lambda: None

    def show(self, messages: list[dict[str, Any]], *, acknowledge: bool = True) -> None:
        # Printed and acknowledged under one lock: a quit right after a message appeared
        # waits for its acknowledgement (settle), or the next chat would show it again.
        with self._lock:
            # An item without an outbox id (an older daemon) cannot be told apart: shown.
            fresh = [m for m in messages if m.get("id") not in self._shown]
            for message in fresh:
                self._remember(message)
                if not self._was_streamed(message):
                    self._print(message_line(message))
            ids = tuple(m["id"] for m in fresh if isinstance(m.get("id"), int))
            if ids and acknowledge:
                self._client.acknowledge(self._session, ids=ids)

    def settle(self, timeout_s: float = 5.0) -> None:
        """Wait (a bounded while) for a message being shown to be acknowledged."""
        if self._lock.acquire(timeout=timeout_s):
            self._lock.release()

    def show_unread(self) -> None:
        self.show(self._client.outbox(self._session, unread=True))

    def show_earlier(self) -> None:
        """What was said before, unread, as labelled notes (``send --wait``): its standard
        output is the answer to its own message, and only that."""
        with self._lock:
            earlier = self._client.outbox(self._session, unread=True)
            fresh = [m for m in earlier if m.get("id") not in self._shown]
            for message in fresh:
                self._remember(message)
                self.note(f"[unread, from before this message] {message_line(message)}")
        ids = tuple(m["id"] for m in fresh if isinstance(m.get("id"), int))
        if ids:
            self._client.acknowledge(self._session, ids=ids)

    def note(self, text: str) -> None:
        """One line about what happens (tool activity, alerts): dim on a terminal."""
        with self._lock:
            self._print(text, stream=sys.stderr, dim=self._terminal)

    def stream(self, delta: str) -> None:
        if not self._terminal:
            return  # a pipe gets the whole reply when it is complete
        with self._lock:
            if self._joined_late:
                return
            self._streamed += delta
            self.tail += delta
            if "\n" in self.tail:
                done, self.tail = self.tail.rsplit("\n", 1)
                self._print(done)
            rows, self.tail = fit(self.tail, self._columns())
            if rows:
                self._print("\n".join(rows))
        self.on_change()

    def drop_stream(self, cause: str) -> None:
        with self._lock:
            if not self._streamed:
                return
            self._end_stream()
            self.note(f"[partial answer dropped: {cause}]")
        self.on_change()

    def lost_connection(self) -> None:
        """The stream broke: a partial answer on screen ends here, and until the model
        call under way is over (:meth:`call_over`) its deltas are not shown."""
        with self._lock:
            self._joined_late = True
            if not self._streamed:
                return
            self._end_stream()
            self.note("[connection to the daemon lost mid-answer; the answer follows whole]")
        self.on_change()

    def call_over(self) -> None:
        """A model call ended (a reply, a tool, a run's start or end): the next one's
        deltas are shown from their start."""
        with self._lock:
            self._joined_late = False

    def end_stream(self) -> None:
        """At the end of a run: text streamed but never sent as a reply stays on screen."""
        with self._lock:
            self._end_stream()
        self.on_change()

    def _was_streamed(self, message: dict[str, Any]) -> bool:
        """Whether this message's text is the one just streamed (so it is on screen)."""
        streamed = self._streamed.strip()
        if not streamed or str(message.get("text", "")).strip() != streamed:
            return False
        self._end_stream()
        self.on_change()
        return True

    def _end_stream(self) -> None:
        if self.tail:
            self._print(self.tail)
        self._streamed = self.tail = ""

    def _remember(self, message: dict[str, Any]) -> None:
        if isinstance(message.get("id"), int):
            self._shown.add(message["id"])

    def _columns(self) -> int:
        # Asked of the terminal itself, each time: it may have been resized since, and
        # an exported $COLUMNS (what shutil reads first) is often stale.
        stdout = sys.__stdout__
        try:
            if stdout is not None:
                return os.get_terminal_size(stdout.fileno()).columns
        except (OSError, ValueError):
            pass
        return shutil.get_terminal_size().columns

    def _print(self, text: str, stream: Any = None, *, dim: bool = False) -> None:
        if self._terminal:
            text = "\n".join(wrap(text, self._columns()))
        if dim:  # around the wrapped rows: an escape code is no cell of a row
            text = f"{DIM}{text}{RESET}"
        print(text, file=stream or sys.stdout, flush=True)


def tool_line(item: dict[str, Any]) -> str | None:
    """One line for a tool call's start and end; progress reports are not shown."""
    name = item.get("name", "?")
    if item.get("state") == "started":
        return f"· {name} started"
    if item.get("state") != "finished":
        return None
    elapsed = float(item.get("elapsed_s") or 0.0)
    failed = item.get("is_error") or item.get("outcome") not in (None, "done")
    how = " (failed)" if item.get("is_error") else (" (cancelled)" if failed else "")
    return f"· {name} finished in {elapsed:.1f} s{how}"
