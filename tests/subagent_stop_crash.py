"""`wakeful run` that dies (SIGKILL, sent to itself) at the one point a parent's stop is
stored and routed but its children are not cancelled yet: the moment the subagents'
manager takes the stop from the feed. Run as ``python -m tests.subagent_stop_crash -c
CONFIG run``; everything else is the real daemon."""

from __future__ import annotations

import os
import signal
import sys

from wakeful.cli.main import main
from wakeful.subagents import manager

_handle = manager.SubagentManager._handle


async def _die_at_a_stop(self: manager.SubagentManager, received: manager._Signal) -> None:
    if received.kind == "stop":
        print("killed at the stop", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    await _handle(self, received)


manager.SubagentManager._handle = _die_at_a_stop  # type: ignore[method-assign,assignment]

if __name__ == "__main__":
    sys.exit(main())
