"""Budgets that hold (issue 24): a call whose worst case would cross a cap is not made,
the owner is told once, the events wait and run once the cap is raised; the ledger
never lets held + used pass a cap, whatever the interleaving; with no [budget] nothing
is guarded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, prompt_estimate
from tests.test_event_flood import HOOK, event_id, post_flood
from wakeful.budget.ledger import Ledger
from wakeful.store.memory_state import MemoryState

pytestmark = pytest.mark.anyio
# About three worst-case calls of the default request (~2.5k tokens in, 8192 out), so the
# flood below crosses it after a few calls. The default has no cap: this test sets one.
CAP = 30_000
FLOOD = 40


async def events(h: Harness) -> list[dict[str, Any]]:
    return list(await h.daemon.event_log(None, limit=10_000))


async def until(check: Any, what: str, timeout_s: float = 30.0) -> None:
    with anyio.fail_after(timeout_s):
        # The store and the loop have no "changed" event to wait on from here: polled.
        while not await check():  # noqa: ASYNC110
            await anyio.sleep(0.05)


async def test_a_webhook_flood_stops_at_its_cap_alerts_once_and_runs_when_raised(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    settings = daemon_settings(
        tmp_path,
        model_server.base_url,
        hooks=[HOOK],
        budget={"source_daily_tokens": {"webhook": CAP}},
    )
    async with harness(settings) as h:
        main = h.daemon.sessions.get("main")
        await post_flood(h, FLOOD, 2000)

        async def refused_and_resting() -> bool:
            notices = (await h.client.get("/api/sessions/main/outbox")).json()["messages"]
            alerted = [m for m in notices if m["key"].startswith("alert:budget:")]
            return bool(alerted) and not main.busy

        await until(refused_and_resting, "the cap to be reached and the loop to rest")
        notices = (await h.client.get("/api/sessions/main/outbox")).json()["messages"]
        alerts = [m for m in notices if m["key"].startswith("alert:budget:")]
        before = " ".join(str(r.body["messages"]) for r in model_server.requests)
        unanswered = [i for i in range(FLOOD) if event_id(i) not in before]
        spent = sum(prompt_estimate(r.body) + 1 for r in model_server.requests)  # "ok": 1 out
        report = (await h.client.get("/api/budget")).json()["caps"]
        assert len(alerts) == 1, alerts
        assert "source_daily_tokens.webhook" in alerts[0]["text"]
        # Past the cap the events wait (queued, or taken by the refused call's safe point).
        assert unanswered, "every event reached the model: the cap did not hold"
        assert spent <= CAP, spent
        (row,) = [r for r in report if r["cap"] == "source_daily_tokens.webhook"]
        assert row["used"] <= CAP and row["reached"] is True, row
        scraped = (await h.client.get("/metrics")).text
        figures = {
            line.split('key="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
            for line in scraped.splitlines()
            if line.startswith('wakeful_component_value{component="budget"')
        }
        assert figures["calls_refused"] >= 1 and figures["caps_reached"] == 1, figures
        assert figures["calls_reserved"] == len(model_server.requests), figures

        response = await h.client.post(
            "/api/budget/caps", json={"cap": "source_daily_tokens.webhook", "amount": 10**9}
        )
        assert response.status_code == 200, response.text

        async def all_ran() -> bool:
            log = await events(h)
            pending = [e for e in log if e["status"] == "pending"]
            return not pending and not main.busy

        await until(all_ran, "every waiting webhook to run")
    carried = " ".join(str(r.body["messages"]) for r in model_server.requests)
    assert all(event_id(i) in carried for i in range(FLOOD))


async def test_without_a_budget_nothing_guards_the_calls(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The default config: no budget component, no guard on the loops, no limit sent."""
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        assert h.daemon.sessions.deps.spend is None
        assert (await h.client.get("/api/budget")).status_code == 404
        await h.send("hello")
        await anyio.to_thread.run_sync(model_server.wait_for_requests, 1, 10.0)
    assert "max_tokens" not in model_server.requests[0].body


OPS = st.lists(
    st.tuples(st.sampled_from(["hold", "settle"]), st.integers(0, 5), st.integers(0, 400)),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(OPS, st.integers(1, 1000))
async def test_held_and_used_never_pass_the_cap_and_settling_loses_nothing(
    ops: list[tuple[str, int, int]], cap: int
) -> None:
    """Any interleaving of holds and settles, five callers at once: a hold is granted only
    within the cap, and every settled amount is counted."""
    ledger, key = Ledger(MemoryState()), "budget:test:"
    granted: dict[int, int] = {}
    settled = 0

    async def step(op: str, caller: int, amount: int) -> None:
        nonlocal settled
        ticket = f"t{caller}"
        if op == "hold" and caller not in granted:
            if await ledger.hold(key, ticket, amount, cap):
                granted[caller] = amount
        elif op == "settle" and caller in granted:
            used = min(amount, granted.pop(caller))
            await ledger.settle(key, ticket, used)
            settled += used
        balance = await ledger.balance(key)
        assert balance.held == sum(granted.values())
        assert balance.used == settled
        assert balance.used + balance.held <= cap

    async with anyio.create_task_group() as group:
        for op in ops:
            group.start_soon(step, *op)
    balance = await ledger.balance(key)
    assert balance.used == settled
    assert balance.used + balance.held <= cap or (not granted and balance.used <= settled)


def _budget_lines() -> list[str]:
    from tests.test_documented_commands import ROOT, shell_lines

    return shell_lines(ROOT / "docs" / "budgets.md")


def _toml_block() -> str:
    from tests.test_documented_commands import ROOT

    text = (ROOT / "docs" / "budgets.md").read_text()
    return text.split("```toml\n", 1)[1].split("```", 1)[0]


def test_the_guides_example_config_loads_as_written(tmp_path: Path) -> None:
    from wakeful.app.config import load_settings

    path = tmp_path / "wakeful.toml"
    path.write_text(_toml_block())
    budget = load_settings(path).budget
    assert budget.configured and budget.source_daily_tokens == {"webhook": 200000, "email": 300000}
    assert budget.timezone == "Europe/Berlin"


def _run_lines(config: Path, lines: list[str]) -> list[tuple[int, str, str]]:
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "WAKEFUL_CONFIG": str(config),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    done = [
        subprocess.run(line, shell=True, env=env, capture_output=True, text=True) for line in lines
    ]
    return [(d.returncode, d.stdout, d.stderr) for d in done]


async def test_the_budget_guides_commands_run_as_written(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """docs/budgets.md's ```sh lines, exactly as written, against a daemon with a cap."""
    from tests.test_chat_foundation import write_cli_config

    lines = _budget_lines()
    assert lines == ["wakeful budget", "wakeful budget set source_daily_tokens.webhook 100000"]
    settings = daemon_settings(
        tmp_path, model_server.base_url, budget={"source_daily_tokens": {"webhook": CAP}}
    )
    async with harness(settings) as h:
        config = write_cli_config(tmp_path, h.running.url)
        (shown, changed) = await anyio.to_thread.run_sync(_run_lines, config, lines)
        report = (await h.client.get("/api/budget")).json()["caps"]
    assert shown[0] == 0 and changed[0] == 0, (shown, changed)
    assert "source_daily_tokens.webhook  webhook  day:" in shown[1]
    assert f"0 of {CAP} tokens" in shown[1]
    assert changed[1].startswith("source_daily_tokens.webhook is now 100000\n"), changed[1]
    (row,) = [r for r in report if r["cap"] == "source_daily_tokens.webhook"]
    assert row["limit"] == 100000


async def test_budget_without_a_budget_says_how_to_configure_one(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The default config (no [budget]): one line naming the section and the guide."""
    from tests.test_chat_foundation import write_cli_config

    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        config = write_cli_config(tmp_path, h.running.url)
        ((code, out, err),) = await anyio.to_thread.run_sync(_run_lines, config, ["wakeful budget"])
    assert code == 1 and out == "", (code, out, err)
    assert "no [budget] is configured" in err and "docs/budgets.md" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


async def test_two_daemons_on_one_redis_never_pass_a_shared_cap(redis_prefix: str) -> None:
    """Two daemons' budgets on one Redis prefix (two connections, as two processes would
    have), 2 x 30 calls at once against one daily cap: what they reserve and then use
    together stays within it, and the cap is used up, not refused early."""
    from tests.redis_server import REDIS_URL
    from wakeful.budget.config import BudgetSection
    from wakeful.budget.guard import Budget
    from wakeful.core.provider import Usage
    from wakeful.core.spend import SpendRefused, SpendRequest
    from wakeful.store.redis_store import RedisStore

    cap, worst = 10_000, 1_000  # ten calls' worst case
    section = BudgetSection(daily_tokens=cap)
    stores = [await RedisStore(REDIS_URL, prefix=redis_prefix).open() for _ in range(2)]
    budgets = [Budget(section, s, model="m", reply_limit=500) for s in stores]
    made: list[int] = []
    refused = 0

    async def call(budget: Budget, n: int) -> None:
        nonlocal refused
        request = SpendRequest(f"s{n}", "webhook", "", 500, 500)
        try:
            ticket = await budget.reserve(request)
        except SpendRefused:
            refused += 1
            return
        made.append(n)
        await anyio.lowlevel.checkpoint()  # the call: the other daemon reserves meanwhile
        await budget.settle(ticket, Usage(prompt_tokens=500, completion_tokens=500))

    try:
        async with anyio.create_task_group() as group:
            for n in range(60):
                group.start_soon(call, budgets[n % 2], n)
        (row,) = [r for r in await budgets[0].report() if r["cap"] == "daily_tokens"]
    finally:
        for store in stores:
            await store.aclose()
    assert len(made) * worst <= cap and row["used"] <= cap, (made, row)
    assert len(made) == cap // worst and refused == 60 - len(made), (made, refused)
    assert row["used"] == len(made) * worst and row["held"] == 0, row
