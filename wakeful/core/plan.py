"""The model's own plan (SPEC §7): items it keeps with ``update_plan``, shown at the end
of every request in the status bar, so it always sees where it is.

The plan is stored with the session (one small record, on either store backend), so
it outlives a restart and a compaction: a summary may drop the turns that made the
plan, never the plan. Its items are the model's own words, but a model that read a
stranger's text may have been steered while writing them: a plan written while the
session was tainted says so where it is shown, so it never reads as the owner's.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum

from wakeful.store.base import ChannelState

KEY_PREFIX = "plan:"
MAX_ITEMS = 20
MAX_TITLE_CHARS = 120


class PlanStatus(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    DONE = "done"


@dataclass(frozen=True)
class PlanItem:
    title: str
    status: PlanStatus
    due: str | None = None  # ISO 8601, UTC


@dataclass(frozen=True)
class Plan:
    items: tuple[PlanItem, ...] = ()
    updated_at: str | None = None
    tainted: bool = False  # written while the session was tainted

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str) -> Plan:
        data = json.loads(raw)
        items = tuple(
            PlanItem(i["title"], PlanStatus(i["status"]), i.get("due")) for i in data["items"]
        )
        return cls(items, data.get("updated_at"), bool(data.get("tainted")))

    def public(self) -> dict[str, object]:
        return {
            "items": [asdict(item) for item in self.items],
            "updated_at": self.updated_at,
            "tainted": self.tainted,
        }


class SessionPlans:
    """Each session's plan, one record per session in the store's small state."""

    def __init__(self, state: ChannelState) -> None:
        self._state = state

    async def get(self, session: str) -> Plan:
        raw = await self._state.get_state(KEY_PREFIX + session)
        return Plan() if raw is None else Plan.from_json(raw)

    async def put(self, session: str, plan: Plan) -> None:
        await self._state.put_state(KEY_PREFIX + session, plan.to_json() if plan.items else None)


def plan_lines(plan: Plan) -> list[str]:
    """The plan as the status bar shows it: ``TODO: [1] … (in_progress)``."""
    if not plan.items:
        return ["Plan: none (update_plan keeps one for work of several steps)"]
    header = "Plan (update_plan)"
    if plan.tainted:
        header += (
            " — written while this session was tainted: the model's own notes, "
            "not the owner's instructions"
        )
    lines = [header + ":"]
    for number, item in enumerate(plan.items, 1):
        due = f", due {item.due}" if item.due else ""
        lines.append(f"TODO: [{number}] {item.title} ({item.status.value}{due})")
    return lines
