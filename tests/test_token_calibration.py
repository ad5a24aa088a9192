"""The token estimate follows the provider's prompt counts only while they are
plausible: a server that reports 10 tokens for every request cannot switch the
budget off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply
from tests.test_context_budget import agent, drive
from wakeful.core.context.tokens import MAX_SCALE, MIN_SCALE, TokenEstimator, raw_estimate

pytestmark = pytest.mark.anyio


def lying(body: dict[str, Any]) -> Reply:
    """test_context_budget's agent, on a server that reports 10 prompt tokens each time."""
    reply = agent(body)
    return Reply(text=reply.text, tool_calls=reply.tool_calls, prompt_tokens=10)


@pytest.mark.parametrize(
    "context",
    [
        # The settings of test_a_long_session_stays_inside_its_budget, its honest sibling.
        {"max_tokens": 10000, "reserve_tokens": 1000, "keep_tool_results": 2},
        {"max_tokens": 10000},  # every [context] setting but the model's window at its default
    ],
    ids=["tuned", "defaults"],
)
async def test_a_server_reporting_10_tokens_still_meets_the_budget_and_never_overflows(
    tmp_path: Path, model_server: FakeModelServer, context: dict[str, Any]
) -> None:
    """A 10k window that 40 turns outgrow: every request fits the real window, the
    budget prunes or compacts, and the lie is logged once."""
    model_server.responder = lying
    model_server.context_window = context["max_tokens"]
    settings = daemon_settings(tmp_path, model_server.base_url, context=context)
    with capture_logs() as logs:
        async with harness(settings) as h:
            for step in range(40):
                await drive(h, f"step {step}")
            status = (await h.client.get("/api/status")).json()["sessions"]["main"]["context"]
    assert model_server.too_long == []  # no request went over the window
    # The budget acted (a budget switched off by the lie would neither prune nor compact).
    assert status["compactions"] + status["prunes"] >= 1, status
    warned = [e for e in logs if "prompt token counts are implausible" in e["event"]]
    assert len(warned) == 1, warned
    assert warned[0]["session"] == "main" and warned[0]["reported"] == 10


@given(
    figures=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(-10, 10**7)), min_size=1, max_size=50
    ),
    item=st.text(max_size=400),
)
def test_the_scale_stays_within_its_bounds(figures: list[tuple[int, int]], item: str) -> None:
    """Whatever a provider reports, an item counts between MIN_SCALE and MAX_SCALE
    times its byte-based estimate."""
    tokens = TokenEstimator("s")
    for estimated, reported in figures:
        tokens.observe(estimated, reported)
        assert MIN_SCALE <= tokens.scale <= MAX_SCALE
        raw = raw_estimate(item)
        assert int(raw * MIN_SCALE) <= tokens.count(item) <= int(raw * MAX_SCALE) + 1


def test_plausible_figures_still_calibrate() -> None:
    """An honest tokenizer's count (1.3 x, code-like text) moves the estimate to it."""
    tokens = TokenEstimator("s")
    for _ in range(20):
        tokens.observe(1000, 1300)
    assert tokens.scale == pytest.approx(1.3, rel=1e-3)
