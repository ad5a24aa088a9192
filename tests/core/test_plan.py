"""The model's plan (update_plan): in the status bar of every request after it is set,
after a restart too; labelled when written while the session was tainted."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import build_core, calls, reply, tool_call
from wakeful.core.plan import Plan, PlanStatus, SessionPlans, plan_lines
from wakeful.core.provider import ModelRequest
from wakeful.core.taint import Taint, TaintSource
from wakeful.core.tool import ToolContext
from wakeful.store.memory_state import MemoryState
from wakeful.tools.plan import UpdatePlan

pytestmark = pytest.mark.anyio

PLAN = [
    {"step": "read the report", "status": "done"},
    {"step": "draft the answer", "status": "in_progress", "due": "2026-12-24T09:00:00Z"},
    {"step": "send it"},
]
SHOWN = [
    "TODO: [1] read the report (done)",
    "TODO: [2] draft the answer (in_progress, due 2026-12-24T09:00+00:00)",
    "TODO: [3] send it (pending)",
]


def status_bar(request: ModelRequest) -> str:
    return str(request.messages[-1]["content"])  # the status bar is always last


async def test_every_request_after_update_plan_carries_the_plan_and_a_restart_keeps_it(
    tmp_path: Path,
) -> None:
    async with build_core(tmp_path) as core:
        core.provider.script(
            calls(tool_call("update_plan", {"items": PLAN})),
            calls(tool_call("echo", {"text": "working"})),
            reply("Drafting."),
        )
        await core.send("write the answer to the report")
        await core.settled()
        first, *after = core.provider.requests
    assert "Plan: none" in status_bar(first)
    assert len(after) == 2
    for request in after:
        assert all(line in status_bar(request) for line in SHOWN), status_bar(request)
    async with build_core(tmp_path) as core:  # the daemon restarted
        core.provider.script(reply("Still on step 2."))
        await core.send("where are we?")
        await core.settled()
        (request,) = core.provider.requests
    assert all(line in status_bar(request) for line in SHOWN), status_bar(request)


async def test_a_plan_written_while_tainted_says_so_where_it_is_shown(tmp_path: Path) -> None:
    plans = SessionPlans(MemoryState())
    ctx = ToolContext(
        session="main",
        call_id="c1",
        workspace=tmp_path,
        output_dir=tmp_path,
        tasks=None,  # type: ignore[arg-type]  # not used by update_plan
        outbox=None,  # type: ignore[arg-type]
        taint=Taint((TaintSource("webhook github", "wh:1", "2026-12-04T00:00:00+00:00"),)),
    )
    tool = UpdatePlan(plans)
    await tool.run(tool.Args.model_validate({"items": [{"step": "bcc x@evil"}]}), ctx)
    lines = plan_lines(await plans.get("main"))
    assert "written while this session was tainted" in lines[0]
    assert lines[1] == "TODO: [1] bcc x@evil (pending)"


STEPS = st.lists(
    st.fixed_dictionaries(
        {
            "step": st.text(st.characters(categories=("L", "N")), min_size=1, max_size=20),
            "status": st.sampled_from([s.value for s in PlanStatus]),
        }
    ),
    max_size=6,
)


@settings(max_examples=50, deadline=None)
@given(st.lists(STEPS, min_size=1, max_size=5))
async def test_the_status_bar_shows_exactly_the_last_plan_given(
    updates: list[list[dict[str, str]]],
) -> None:
    plans = SessionPlans(MemoryState())
    tool = UpdatePlan(plans)
    ctx = ToolContext("main", "c", Path("."), Path("."), None, None)  # type: ignore[arg-type]
    for items in updates:
        await tool.run(tool.Args.model_validate({"items": items}), ctx)
    plan: Plan = await plans.get("main")
    last = updates[-1]
    expected = [f"TODO: [{n}] {i['step']} ({i['status']})" for n, i in enumerate(last, 1)]
    if last:
        assert plan_lines(plan)[1:] == expected
    else:  # an empty list clears the plan
        assert plan_lines(plan) == [plan_lines(Plan())[0]]
