"""What a new child may be: its depth, its parent's fan-out, its tools and its budget.

Each refusal is one sentence naming the argument or the ``[subagents]`` key and
what to do instead; the tool hands it to the model as an error.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from wakeful.subagents.config import SubagentsSection
from wakeful.subagents.records import Budget, RecordBook

# The tools that manage children: a child at the deepest level allowed gets none of them.
FAMILY = frozenset(
    {"spawn_subagent", "send_message_to_subagent", "get_subagent_status", "cancel_subagent"}
)
REPORT = "report_to_parent"  # every child has it; a top-level session cannot use it
# A child talks to its parent (its results, report_to_parent), never to the user: what
# the user should read reaches them through the parent. Its replies are not delivered
# either (SubagentScope.delivers_replies).
USER_FACING = frozenset({"reply_to_user", "send_user_notification"})


class Refused(ValueError):
    """A spawn that the limits do not allow; the message says which and why."""


@dataclass(frozen=True)
class BudgetAsked:
    model_calls: int | None = None
    tokens: int | None = None
    seconds: float | None = None


def child_depth(book: RecordBook, parent: str, options: SubagentsSection) -> int:
    parent_record = book.by_session(parent)
    depth = (parent_record.depth if parent_record else 0) + 1
    if depth > options.max_depth:
        raise Refused(
            f"this session cannot spawn subagents: it would be depth {depth} and "
            f"[subagents] max_depth = {options.max_depth}; do the task here instead"
        )
    return depth


def check_fan_out(book: RecordBook, parent: str, options: SubagentsSection) -> None:
    live = [r for r in book.children_of(parent) if not r.state.ended]
    if len(live) >= options.max_children:
        listing = ", ".join(f"{r.subagent_id} ({r.state.value})" for r in live)
        raise Refused(
            f"this session already has {len(live)} subagents ([subagents] max_children = "
            f"{options.max_children}): {listing}; wait for one to finish or end one with "
            "cancel_subagent"
        )


def child_tools(
    parent_tools: Sequence[str],
    asked: Collection[str] | None,
    *,
    depth: int,
    options: SubagentsSection,
) -> list[str]:
    """The parent's tools, intersected with those asked for; never those that talk to the
    user; without the family at the deepest level; always with report_to_parent. In the
    parent's order."""
    available = [name for name in parent_tools if name != REPORT and name not in USER_FACING]
    if depth >= options.max_depth:
        available = [name for name in available if name not in FAMILY]
    if asked is not None:
        unknown = sorted(set(asked) - set(available))
        if unknown:
            raise Refused(
                f"tools: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not "
                f"available to a subagent of this session; choose from: {', '.join(available)}"
            )
        available = [name for name in available if name in set(asked)]
    return [*available, REPORT]


def child_budget(asked: BudgetAsked | None, options: SubagentsSection) -> Budget:
    asked = asked or BudgetAsked()
    limits = (
        ("model_calls", asked.model_calls, options.default_budget_model_calls),
        ("tokens", asked.tokens, options.default_budget_tokens),
        ("seconds", asked.seconds, options.default_budget_seconds),
    )
    for name, value, cap in limits:
        if value is not None and value > cap:
            raise Refused(
                f"budget.{name} = {value:g} is above the most a subagent may have "
                f"([subagents] default_budget_{name} = {cap:g}); ask for {cap:g} or less"
            )
    return Budget(
        model_calls=asked.model_calls or options.default_budget_model_calls,
        tokens=asked.tokens or options.default_budget_tokens,
        seconds=asked.seconds or options.default_budget_seconds,
    )
