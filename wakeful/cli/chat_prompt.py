"""The interactive side of `wakeful chat`: a prompt_toolkit line editor.

Output from the follower thread is printed above the line being typed
(``patch_stdout``), the streaming reply's unfinished line is drawn just above
the prompt, and the prompt is never blocked by a run: a line typed during a
run is sent at once, `!stop` or Ctrl-C interrupts the run, Ctrl-C twice
(when idle) or Ctrl-D quits. A line is sent with the terminal still in raw mode,
so a key pressed meanwhile waits for the next prompt instead of going to the
terminal's line discipline (which takes a ^D as end-of-file and loses it).
History lives in the user's state directory, never in a daemon's data_dir; when
it cannot be kept, the chat goes on.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.patch_stdout import patch_stdout

from wakeful.cli.chat_follower import Follower, message_kind, start_following
from wakeful.cli.chat_screen import ChatScreen
from wakeful.cli.client import CliError, DaemonClient

PROMPT = "you> "
QUIT_WINDOW_S = 2.0  # a second Ctrl-C within this long quits


def history_path() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "wakeful-chat" / "history"


class _TolerantFileHistory(FileHistory):
    """A history file that stops being written, rather than failing the chat, on an error."""

    def store_string(self, string: str) -> None:
        # The line is still in this chat's memory; only the file misses it.
        with contextlib.suppress(OSError):
            super().store_string(string)


def open_history(screen: ChatScreen) -> History:
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o600, exist_ok=True)
        return _TolerantFileHistory(str(path))
    except OSError as exc:
        screen.note(f"[no saved history: cannot write {path}: {exc.strerror or exc}]")
        return InMemoryHistory()


class TerminalChat:
    def __init__(
        self,
        client: DaemonClient,
        session: str,
        screen: ChatScreen,
        follower: Follower,
        *,
        model: bool,
    ) -> None:
        self._client = client
        self._session = session
        self._screen = screen
        self._follower = follower
        self._model = model  # without a model no run starts, so nothing to interrupt
        self._last_idle_ctrl_c = float("-inf")
        self._raw_mode: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext

    def run(self) -> int:
        # Following first: the unread messages are printed before the first prompt.
        start_following(self._client, self._session, self._follower)
        try:
            with patch_stdout(raw=True):
                prompt: PromptSession[str] = PromptSession(
                    self._message, history=open_history(self._screen)
                )
                self._screen.on_change = prompt.app.invalidate
                self._raw_mode = prompt.input.raw_mode
                return self._loop(prompt)
        finally:
            self._follower.stop()

    def _message(self) -> FormattedText:
        # The streaming reply's unfinished line, above the line being typed; not in
        # the last drawing of an accepted line, which stays on screen (it is printed
        # in its place when it is finished).
        tail = "" if get_app().is_done else self._screen.tail
        return FormattedText([("", f"{tail}\n" if tail else ""), ("", PROMPT)])

    def _loop(self, prompt: PromptSession[str]) -> int:
        while True:
            try:
                line = prompt.prompt().strip()
                if line:
                    self._send(line, message_kind(line))
            except EOFError:
                return 0
            except KeyboardInterrupt:  # at the prompt (a Ctrl-C typed while sending waits there)
                if self._ctrl_c():
                    return 0

    def _ctrl_c(self) -> bool:
        """Interrupt a run, or quit when idle and pressed twice; True to quit."""
        if self._follower.running.is_set():
            self._send("!stop", "user.interrupt")
            return False
        now = time.monotonic()
        if now - self._last_idle_ctrl_c <= QUIT_WINDOW_S:
            return True
        self._last_idle_ctrl_c = now
        self._screen.note("[Ctrl-C again to quit, or Ctrl-D]")
        return False

    def _send(self, text: str, kind: str) -> None:
        if kind == "user.input" and self._model:
            # Set before sending, so this run's own end (the idle item) clears it.
            self._follower.running.set()  # a run is coming: Ctrl-C now interrupts it
        try:
            # Between prompts prompt_toolkit leaves raw mode; a ^D typed during the post
            # would be the line discipline's end-of-file, never a key the chat reads.
            with self._raw_mode():
                self._client.send(self._session, text, kind)
        except CliError as exc:
            self._screen.note(f"wakeful: {exc}")
            return
        if kind == "user.interrupt":
            # ``running`` stays set: the run goes on to answer the interrupt, and Ctrl-C
            # must interrupt that too. Only the run's own end (the idle item) clears it.
            self._screen.note("[interrupt sent]")
