"""`wakeful chat` on a real pty (pexpect), and its screen as a terminal draws it (pyte).

The raw output of a line editor repeats what it redraws, so "shown once" is
asserted on the rendered screen, not on the bytes.
"""

from __future__ import annotations

import io
import os
import sys
import time
import weakref
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte

ROWS, COLUMNS = 200, 120  # tall enough that nothing a test prints scrolls away
SIZES: weakref.WeakKeyDictionary[pexpect.spawn, tuple[int, int]] = weakref.WeakKeyDictionary()


def spawn_chat(config: Path, state_home: Path, *args: str, columns: int = COLUMNS) -> pexpect.spawn:
    env = {
        **os.environ,
        "TERM": "xterm",
        "XDG_STATE_HOME": str(state_home),  # the chat's history goes here
        # pexpect answers no cursor-position request; a real terminal does.
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "wakeful", "-c", str(config), "chat", *args],
        env=env,
        encoding="utf-8",
        timeout=15,
        dimensions=(ROWS, columns),
    )
    child.logfile_read = io.StringIO()
    SIZES[child] = (ROWS, columns)  # still known once the child has exited
    child.expect("chatting in session 'main'")
    return child


def transcript(child: pexpect.spawn) -> str:
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    return log.getvalue()


def screen_lines(child: pexpect.spawn) -> list[str]:
    """The terminal's lines after everything the chat wrote so far."""
    rows, columns = SIZES.get(child, (ROWS, COLUMNS))
    screen = pyte.Screen(columns, rows)
    pyte.Stream(screen).feed(transcript(child))
    return [line.rstrip() for line in screen.display]


def on_screen(child: pexpect.spawn) -> str:
    return "\n".join(screen_lines(child))


def screen_until(
    child: pexpect.spawn, done: Callable[[list[str]], bool], timeout_s: float = 10.0
) -> list[str]:
    """The screen once ``done`` holds for it, reading what the chat writes meanwhile: a
    prompt redraw ("you>") comes between the rows of a stream, so it marks no end."""
    deadline = time.monotonic() + timeout_s
    while not done(lines := screen_lines(child)):
        if time.monotonic() > deadline:
            raise AssertionError(f"the screen never got there: {lines}")
        # Reads whatever arrives within the slice (the EOF or TIMEOUT is not an error).
        child.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=0.1)
    return lines
