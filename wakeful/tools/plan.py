"""update_plan: the model keeps its plan, and sees it at the end of every request."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import Field, field_validator

from wakeful.core.effects import Effect
from wakeful.core.plan import MAX_ITEMS, MAX_TITLE_CHARS, Plan, PlanItem, PlanStatus, SessionPlans
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput


class ItemArgs(ToolArgs):
    step: str = Field(min_length=1, max_length=MAX_TITLE_CHARS, description="a few words")
    status: Literal["pending", "in_progress", "done"] = "pending"
    due: str | None = Field(
        default=None, description="when it is due, ISO 8601, e.g. 2026-12-24T09:00:00Z"
    )

    @field_validator("due")
    @classmethod
    def _due_is_a_time(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("must be an ISO 8601 time such as 2026-12-24T09:00:00Z") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)  # a time without a zone is taken as UTC
        return moment.astimezone(UTC).isoformat(timespec="minutes")


class UpdatePlan:
    name = "update_plan"
    # Sent in every request: the status bar points at it, so it must be at hand.
    resident = True
    description = (
        "Replace your plan for this session: the whole list of steps, each with a short "
        "description (step) and a status (pending, in_progress, done), optionally a due time. The "
        "current plan is shown at the end of every request, after restarts and "
        "compactions too, so keep it for any work of several steps and mark steps as you "
        "go. An empty list clears it. "
        'Example: {"items": [{"step": "read the report", "status": "done"}, '
        '{"step": "draft the answer", "status": "in_progress"}]}'
    )

    class Args(ToolArgs):
        items: list[ItemArgs] = Field(max_length=MAX_ITEMS, description="the whole plan")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 5.0

    def __init__(self, plans: SessionPlans) -> None:
        self._plans = plans

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        plan = Plan(
            tuple(PlanItem(i.step.strip(), PlanStatus(i.status), i.due) for i in a.items),
            updated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            tainted=ctx.taint is not None,
        )
        await self._plans.put(ctx.session, plan)
        if not plan.items:
            return ToolOutput("plan cleared")
        done = sum(item.status is PlanStatus.DONE for item in plan.items)
        return ToolOutput(f"plan updated: {len(plan.items)} steps, {done} done")
