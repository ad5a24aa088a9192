"""Sleep until a deadline or a change, whichever comes first: the one timer each watch arms."""

from __future__ import annotations

import time

import anyio


async def until_change_or(changed: anyio.Event, deadline: float | None) -> None:
    """Return when ``changed`` is set or the wall-clock ``deadline`` passes (None: never)."""
    if deadline is None:
        await changed.wait()
        return
    with anyio.move_on_after(max(0.0, deadline - time.time())):
        await changed.wait()
