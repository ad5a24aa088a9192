"""What a tool call can do to the world, as the tool declares it.

The policy chain reads a tool's :class:`Effect` and the :class:`Reach` of one
call (the paths, hosts, recipients and command in its structured arguments);
nothing the model writes in free text takes part in the decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Effect(StrEnum):
    READ = "read"  # looks, changes nothing (read_file, get_time, task_status)
    OWNER = "owner"  # talks to the owner only (reply_to_user, send_user_notification)
    CONTROL = "control"  # the agent's own state: timers, tasks, drafts (taint is inherited)
    # Files, flags or moves the owner's own mail: reversible, and nothing leaves.
    MAILBOX = "mailbox"
    WRITE_WORKSPACE = "write_workspace"  # changes files inside the workspace only
    WRITE_OUTSIDE = "write_outside"  # changes files or state outside the workspace
    NETWORK = "network"  # talks to a host on the internet (fetch_url)
    SEND = "send"  # a message to a third party (send_email)
    SHELL = "shell"  # runs a program (shell_exec, start_shell)
    SPEND = "spend"  # costs money or quota


# Effects a tainted session may not perform without an approval or an allowlist
# (SPEC §8). Reading, writing inside the workspace and talking to the owner are
# not among them: the owner is not a third party.
CONSEQUENTIAL = frozenset(
    {Effect.WRITE_OUTSIDE, Effect.NETWORK, Effect.SEND, Effect.SHELL, Effect.SPEND}
)


@dataclass(frozen=True)
class Reach:
    """What one call touches, taken from its structured arguments by the tool."""

    paths: tuple[str, ...] = ()  # file paths as given (relative to the workspace)
    write_paths: tuple[str, ...] = ()  # of those, the ones it writes
    hosts: tuple[str, ...] = ()  # URLs or host names it contacts
    recipients: tuple[str, ...] = ()  # e-mail addresses it sends to
    command: str | None = None  # a shell command line
    cwd: str | None = None  # the directory a command runs in, as given
