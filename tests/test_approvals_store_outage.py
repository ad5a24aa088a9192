"""A store outage never ends the approvals' task (and with it the daemon).

In a fleet the approvals re-read their records from the store every second (another
daemon may have decided one). Seen in tests/test_fleet_redis_restart.py: Redis
restarted, the read raised StoreUnavailable out of ``Approvals.run``, and the daemon
exited. The pass is tried again once the store answers.
"""

from __future__ import annotations

import anyio
import pytest

from wakeful.core.approvals import Approval, Approvals
from wakeful.kernel.events import Event
from wakeful.store.base import StoreUnavailable
from wakeful.store.memory_state import MemoryState

pytestmark = pytest.mark.anyio


class FlakyState(MemoryState):
    """Refuses ``failures`` reads of the records after the first, then answers again."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.reads = 0
        self.answered_after_outage = anyio.Event()

    async def states_under(self, prefix: str) -> dict[str, str]:
        self.reads += 1
        if 1 < self.reads <= 1 + self.failures:
            raise StoreUnavailable("the event store (Redis) cannot answer: connection refused")
        if self.reads > 1 + self.failures:
            self.answered_after_outage.set()
        return await super().states_under(prefix)


class OwnsAll:
    async def submit(self, event: Event) -> object:
        return None

    async def run_approved(self, approval: Approval) -> str:
        return "ran"

    async def announce(self, approval: Approval) -> None:
        return None

    def owns(self, session: str) -> bool:
        return True


async def test_a_shared_approvals_task_rides_out_a_store_outage() -> None:
    state = FlakyState(failures=2)
    approvals = Approvals(state, timeout_s=900, effects=OwnsAll(), shared=True)
    with anyio.fail_after(15):
        async with anyio.create_task_group() as group:
            await group.start(approvals.run)
            await state.answered_after_outage.wait()  # polled again after two refusals
            group.cancel_scope.cancel()
    assert state.reads >= 4
