"""`wakeful chat`: a terminal chat that streams replies and takes input during a run.

At start it shows the session's unread messages (replies to timers, shell
tasks, webhooks made while no chat was open) and acknowledges them, so the
next chat does not show them again. While it runs, a follower thread
(wakeful.cli.chat_follower) shows the session's feed as it arrives — reply
text as it streams, tool activity, alerts, unprompted replies — while the
prompt (wakeful.cli.chat_prompt) keeps the line being typed intact. On a pipe
it is a plain line mode: each line is sent, its run's replies printed, then the
next line is read.
"""

from __future__ import annotations

import sys

from wakeful.cli.chat_follower import Follower, message_kind, start_following
from wakeful.cli.chat_screen import ChatScreen
from wakeful.cli.client import CliError, DaemonClient


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
