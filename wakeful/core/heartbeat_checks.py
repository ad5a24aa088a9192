"""What a component may offer the heartbeat: a check of its own state, without the
heartbeat importing the component (the e-mail watcher's unread counts, a
subscription gone stale, an alert still open).

A check is an async callable returning findings. A finding is the daemon's own words
— ids, counts, states — never a third party's text (no subject line, no error body):
it becomes a trusted ``system.heartbeat`` event. Its key is stable while the thing it
reports stays the same, because the heartbeat says each key once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    key: str  # said once: a beat never reports the same key again
    text: str


# Called at each beat (inside the active hours); should answer from what the component
# already knows or with one cheap round trip. The heartbeat bounds it with a timeout.
HeartbeatCheck = Callable[[], Awaitable[Sequence[Finding]]]
