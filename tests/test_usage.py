"""`wakeful usage` (issue 24): every model call counted once, by day, session, source
or model, with the cached share and, where a price is configured, dollars. Through a
daemon on the defaults (no caps: the report needs no [budget]), and as an invariant
(hypothesis): for any calls and any grouping, the rows add up to the total."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, prompt_estimate
from tests.test_cli import run_cli
from tests.test_http_api import TOKEN
from tests.webhook_fixtures import NEW_SECRET, dumps, sign_standard
from wakeful.budget.config import ModelPrice
from wakeful.budget.usage import GROUPINGS, usage
from wakeful.store.base import ModelCallRecord

pytestmark = pytest.mark.anyio

records = st.lists(
    st.builds(
        ModelCallRecord,
        session=st.sampled_from(["main", "inbox", "phone"]),
        run_id=st.just("r"),
        model=st.sampled_from(["m1", "m2", ""]),
        latency_s=st.just(0.1),
        prompt_tokens=st.integers(0, 10**6),
        completion_tokens=st.integers(0, 10**5),
        cached_tokens=st.integers(0, 10**6),
        finish_reason=st.none(),
        outcome=st.just("ok"),
        source=st.sampled_from(["user", "webhook", ""]),
        created_at=st.floats(0, 2e9),
    ),
    max_size=40,
)


@given(calls=records, by=st.sampled_from(GROUPINGS))
def test_the_rows_add_up_to_the_total(calls: list[ModelCallRecord], by: str) -> None:
    prices = {"m1": ModelPrice(input=2.5, output=10.0), "m2": ModelPrice(input=1, output=2)}
    report = usage(calls, by=by, zone=ZoneInfo("Europe/Berlin"), prices=prices)
    rows, total = report["rows"], report["total"]
    for field in ("calls", "tokens_in", "tokens_out"):
        assert sum(r[field] for r in rows) == total[field] == sum(
            getattr(c, {"calls": "run_id", "tokens_in": "prompt_tokens",
                        "tokens_out": "completion_tokens"}[field]) if field != "calls" else 1
            for c in calls
        )  # fmt: skip
    priced = all(c.model in prices for c in calls)
    assert (total["cost_usd"] is not None) == priced
    if priced:
        assert abs(sum(r["cost_usd"] for r in rows) - total["cost_usd"]) < 1e-3
    assert len({r["key"] for r in rows}) == len(rows)


async def webhook(h: Harness) -> None:
    body = dumps({"message": "build finished"})
    response = await h.client.post(
        "/hooks/ci", content=body, headers=sign_standard(NEW_SECRET, body, "msg_ci")
    )
    assert response.status_code == 202, response.text


async def answered(h: Harness, session: str, send: object) -> None:
    async with watch_feed(h, session) as feed:
        await send  # type: ignore[misc]
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", 20)


async def test_usage_by_source_and_by_day_through_the_cli(
    tmp_path: Path, model_server: FakeModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two owner messages and a webhook: three calls, by source user 2 / webhook 1,
    tokens as the model reported them, dollars from the configured price (a price
    table, not a cap: the price is this test's; without one the cost is "-")."""
    settings = daemon_settings(
        tmp_path,
        model_server.base_url,
        hooks=[{"name": "ci", "secret": NEW_SECRET, "session": "inbox"}],
        server={"bind": "127.0.0.1:0", "admin_token": TOKEN},
        budget={"prices": {"fake-model": {"input": 2.0, "output": 8.0}}},
    )
    async with harness(settings) as h:
        await answered(h, "main", h.send("hello"))
        await answered(h, "main", h.send("and again"))
        await answered(h, "inbox", webhook(h))
        by_source = (await h.client.get("/api/usage?by=source")).json()
        bad = await h.client.get("/api/usage?by=colour")
        capsys.readouterr()
        with anyio.fail_after(10):
            assert await run_cli(h.running.url, "usage", "--by", "source") == 0
            assert await run_cli(h.running.url, "usage") == 0
        out = capsys.readouterr().out
    rows = {r["key"]: r for r in by_source["rows"]}
    assert rows["user"]["calls"] == 2 and rows["webhook"]["calls"] == 1, rows
    total = by_source["total"]
    # What the fake model reported for each request (its usage chunk), added up.
    assert total["tokens_in"] == sum(prompt_estimate(r.body) for r in model_server.requests)
    expected = (total["tokens_in"] * 2.0 + total["tokens_out"] * 8.0) / 1_000_000
    assert total["tokens_out"] > 0 and abs(total["cost_usd"] - expected) < 1e-6
    assert bad.status_code == 400 and "by must be one of" in bad.json()["error"]
    assert "model calls of the last 30 days, by source" in out
    assert "webhook" in out and "total" in out and "$" in out
