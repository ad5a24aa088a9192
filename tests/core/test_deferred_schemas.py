"""A call in the history always finds its function in the next request's tools array.

A deferred tool's schema joins a session's tools once the model calls it
(``ToolSurface.load``). The loop loads it before the call is written to the
trajectory: a stop or crash between the two must never leave a recorded call whose
function the next request does not offer (a model API refuses such a history). Seen
under load: the outbox's send of the reply's text sat between the two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support import build_core, calls, reply, tool_call
from wakeful.core.loop.session_loop import SessionLoop
from wakeful.core.tool_registry import ToolRegistry
from wakeful.store.base import TrajectoryStore

pytestmark = pytest.mark.anyio


class WatchingSurface:
    """Every tool resident; records, at each load, the calls the history already held."""

    def __init__(self, registry: ToolRegistry, store: TrajectoryStore) -> None:
        self._registry = registry
        self._store = store
        self.recorded_at_load: list[list[str]] = []

    async def tools_for(self, session: str) -> list[dict[str, Any]]:
        return self._registry.definitions()

    async def load(self, session: str, names: Sequence[str]) -> list[str]:
        history = await self._store.trajectory(session)
        called = [c["function"]["name"] for m in history for c in m.get("tool_calls") or []]
        self.recorded_at_load.append(called)
        return list(names)


async def test_a_called_tool_is_loaded_before_its_call_is_in_the_history(
    tmp_path: Path,
) -> None:
    async with build_core(tmp_path, resume=False) as core:
        surface = WatchingSurface(core.tools.registry, core.store)
        deps = dataclasses.replace(core.deps, surface=surface)
        core.provider.script(
            calls(tool_call("echo", {"text": "one"}), text="Checking first."), reply("Done.")
        )
        loop = SessionLoop("main", deps, core.dispatcher.submit_internal)
        core.group.start_soon(loop.run_forever, core.group)
        await core.send("check it")
        await core.until(lambda: surface.recorded_at_load, "the called tool to load")
    assert surface.recorded_at_load[0] == []  # the call was not yet in the history
