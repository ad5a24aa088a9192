"""``[subagents]``: how deep and how wide delegation may go, and a child's default budget."""

from __future__ import annotations

from pydantic import BaseModel, Field

from wakeful.kernel.config_base import Section


class SubagentsSection(Section):
    """Subagents (spawn_subagent): child sessions a session delegates tasks to."""

    # 1: a top-level session may spawn children, which may not spawn their own.
    max_depth: int = Field(default=1, ge=0, le=5, examples=[1])
    # Children a session may have that have not ended (cancel_subagent frees a place).
    max_children: int = Field(default=4, ge=1, le=64, examples=[4])
    # A child's budget when spawn_subagent names none (it may ask for less, never more).
    default_budget_model_calls: int = Field(default=20, ge=1, examples=[20])
    default_budget_tokens: int = Field(default=400_000, ge=1000, examples=[400000])
    default_budget_seconds: float = Field(default=1800.0, gt=0, examples=[1800])


class SubagentSettings(BaseModel):
    subagents: SubagentsSection = Field(default_factory=SubagentsSection)
