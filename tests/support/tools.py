"""Three tiny tools for the core tier: one answers at once, one blocks until the
test releases it, one raises (a bug in a tool, which the registry turns into an
error result)."""

from __future__ import annotations

import anyio

from tests.support.changes import Changes
from wakeful.core.effects import Effect
from wakeful.core.plan import SessionPlans
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.core.tool_registry import ToolRegistry
from wakeful.store.memory_state import MemoryState
from wakeful.tools.plan import UpdatePlan


class EchoArgs(ToolArgs):
    text: str = ""


class Echo:
    name = "echo"
    description = "Say the text back."
    read_only = True
    effect = Effect.READ
    timeout_s: float | None = None
    Args = EchoArgs

    async def run(self, args: EchoArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(f"echo: {args.text}")


class BlockArgs(ToolArgs):
    label: str = ""


class Block:
    """Runs until :attr:`release` is set; records each call that started and each
    that was cancelled (by call id)."""

    name = "block"
    description = "Wait for the test to let it finish."
    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = None
    Args = BlockArgs

    def __init__(self, changes: Changes) -> None:
        self._changes = changes
        self.release = anyio.Event()
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.finished: list[str] = []

    async def run(self, args: BlockArgs, ctx: ToolContext) -> ToolOutput:
        self.started.append(ctx.call_id)
        self._changes.ping()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(ctx.call_id)
            self._changes.ping()
            raise
        self.finished.append(ctx.call_id)
        self._changes.ping()
        return ToolOutput(f"released: {args.label}")


class Explode:
    name = "explode"
    description = "Always fails with a bug."
    read_only = True
    effect = Effect.READ
    timeout_s: float | None = None
    Args = EchoArgs

    async def run(self, args: EchoArgs, ctx: ToolContext) -> ToolOutput:
        raise RuntimeError(f"tool bug: {args.text}")


class TestTools:
    """The registry the core is built with, and the test tools in it."""

    __test__ = False  # not a pytest test class

    def __init__(self, changes: Changes, plans: SessionPlans | None = None) -> None:
        self.echo = Echo()
        self.block = Block(changes)
        self.explode = Explode()
        self.registry = ToolRegistry(default_timeout_s=30)
        # The built-in update_plan, on the core's store: the status bar shows its plan.
        self.update_plan = UpdatePlan(plans or SessionPlans(MemoryState()))
        for tool in (self.echo, self.block, self.explode, self.update_plan):
            self.registry.register(tool)
        self.registry.freeze()
