"""A session that outgrows the model's window: pruned, compacted, never over budget.

The fake model refuses (as OpenAI does: 400 context_length_exceeded) any request
its count puts over its window, and reports usage, which calibrates the daemon's
estimate. The daemon must keep every request inside the budget, keep the newest
user messages verbatim, keep the full history readable, and — when the provider
still says "too long" — shrink once and retry once, or stop the run saying which
session is stuck.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import (
    FakeModelServer,
    Reply,
    ToolCallSpec,
    is_save_request,
    text_reply,
)
from wakeful.core.context.compaction import COMPACTION_PROMPT
from wakeful.core.context.view import SUMMARY_MARK

pytestmark = pytest.mark.anyio

# About 9 kB and 30 kB of output from plain commands: every shell result taints its
# session (wakeful/kernel/trust.py), so these sessions' later commands would wait for an
# approval; the budget tests allowlist them (SHELL_ALLOW), which needs a command
# without quotes or brackets. tests/test_trust_declaration.py runs the default.
BIG_OUTPUT = "od -v -A n -t x1 -N 3000 /dev/zero"
SHELL_ALLOW = {"shell_allow": ["od -v", "echo later"]}


def is_summary_request(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == COMPACTION_PROMPT


def agent(body: dict[str, Any]) -> Reply:
    """Each user step: one shell call with a big output, then a short answer. The
    compaction's summary quotes the steps it was shown."""
    messages = body["messages"]
    if is_summary_request(body):
        steps = sorted(set(_steps(messages[1]["content"])), key=int)
        return text_reply("The user asked for steps " + ", ".join(f'"step {s}"' for s in steps))
    last = [m for m in messages if m["role"] != "system"][-2]  # before the status bar
    if last["role"] == "tool":
        return text_reply("done")
    return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": BIG_OUTPUT})])


def _steps(text: str) -> list[str]:
    import re

    return re.findall(r"step (\d+)", text)


async def drive(h: Harness, text: str) -> None:
    async with watch_feed(h) as feed:
        await h.send(text)
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", timeout_s=30)


@pytest.mark.parametrize("turns", [60, pytest.param(500, marks=pytest.mark.slow)])
async def test_a_long_session_stays_inside_its_budget(
    tmp_path: Path, model_server: FakeModelServer, turns: int
) -> None:
    model_server.responder = agent
    # Room for the resident tools (~2,000 tokens), two whole results (~2,300 each) and
    # the stubs of the rest; small enough that 60 turns compact at least once.
    model_server.context_window = 10000
    context = {"max_tokens": 10000, "reserve_tokens": 1000, "keep_tool_results": 2}
    settings = daemon_settings(tmp_path, model_server.base_url, context=context, safety=SHELL_ALLOW)
    async with harness(settings) as h:
        for step in range(turns):
            await drive(h, f"step {step}")
        status = (await h.client.get("/api/status")).json()["sessions"]["main"]["context"]
        shown = await h.trajectory()
        full = (await h.client.get("/api/sessions/main/trajectory?full=1")).json()["messages"]
    assert model_server.too_long == []  # no request ever went over the window
    assert status["last_problem"] is None
    # Rare, deliberate rewrites: a handful of compactions over the run, not one per turn.
    assert 1 <= status["compactions"] <= max(5, turns // 10), status
    main_requests = [
        r.body
        for r in model_server.requests
        if not is_summary_request(r.body) and not is_save_request(r.body)
    ]
    last = main_requests[-1]["messages"]
    texts = [str(m.get("content") or "") for m in last]
    assert texts[1].startswith(SUMMARY_MARK)  # the boundary, right after the system prompt
    for step in range(turns - 5, turns):  # the newest five user messages, verbatim
        assert any(t.endswith(f"] step {step}") for t in texts), step
    quoted = set(_steps(texts[1]))
    kept = {s for t in texts[2:] for s in _steps(t)}
    assert quoted | kept >= {str(s) for s in range(turns)}  # every step verbatim or quoted
    assert any("[pruned to save context]" in t for t in texts)
    # The prefix stays byte-identical from one request to the next, except at the
    # deliberate rewrites: each prune and each compaction may break it once.
    breaks = 0
    for before, after in itertools.pairwise(main_requests):
        kept = before["messages"][:-1]  # the status bar is always last, and always new
        if after["messages"][: len(kept)] != kept or after["tools"] != before["tools"]:
            breaks += 1
    assert breaks <= status["compactions"] + status["prunes"], (breaks, status)
    # The stored history is whole; the default view starts at the summary.
    users = [m for m in full if m["role"] == "user"]
    assert len(users) == turns and len(full) > len(shown)
    assert str(shown[0]["content"]).startswith(SUMMARY_MARK)


async def test_too_long_is_shrunk_and_retried_once_not_blindly(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The daemon thinks it fits (a large [context] max_tokens) but the model says no:
    pruning old results at once, one retry, and the run goes on."""
    model_server.responder = agent
    context = {"max_tokens": 200000, "keep_tool_results": 1}
    settings = daemon_settings(tmp_path, model_server.base_url, context=context, safety=SHELL_ALLOW)
    async with harness(settings) as h:
        for step in range(6):
            await drive(h, f"step {step}")
        # The model's real window is smaller (yet above the ~7,300 tokens of system
        # prompt and every tool schema, which no pruning can shrink).
        model_server.context_window = 10000
        before = len(model_server.requests)
        await drive(h, "step 6")
        refused = [i for i in model_server.too_long if i >= before]
        answered = [r for r in model_server.requests[before:] if r.index not in refused]
        replies = [m for m in await h.trajectory() if m["role"] == "assistant"]
    assert len(refused) == 1  # refused once, then it fit: not retried as it was
    assert answered and replies[-1]["content"] == "done"


async def test_a_session_that_cannot_fit_stops_with_an_alert_naming_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.responder = agent
    model_server.context_window = 600  # smaller than the system prompt and tools alone
    settings = daemon_settings(tmp_path, model_server.base_url)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("step 0")
        alert = await feed.wait_for(lambda i: i["type"] == "alert" and "run stopped" in i["text"])
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        status = (await h.client.get("/api/status")).json()["sessions"]["main"]["context"]
    assert "session main's context cannot fit the model's window" in alert["text"]
    # Refused once; what it learned from the refusal shows that no retry can fit.
    assert len(model_server.too_long) == 1
    assert "session main" in (status["last_problem"] or "")


async def test_a_pending_approval_survives_compaction_and_is_paid_after_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    from tests.test_approvals import stranger_event, wait_for_request_with

    def respond(body: dict[str, Any]) -> Reply:
        if is_summary_request(body):
            return text_reply("Summary: a stranger asked to run echo; it waits for approval.")
        last = [m for m in body["messages"] if m["role"] != "system"][-2]
        if "please run echo" in str(last.get("content")) and last["role"] == "user":
            return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": "echo later"})])
        if last["role"] == "tool":
            return text_reply("done")
        # The session is tainted, so shell calls would wait: big reads fill it instead.
        return Reply(tool_calls=[ToolCallSpec("read_file", {"path": "big.txt"})])

    model_server.responder = respond
    # Two whole results (~2,000 tokens each) beside the ~2,000 of resident tools: the
    # stubs of the rest fill it within 20 steps, so it compacts.
    model_server.context_window = 8000
    context = {"max_tokens": 8000, "reserve_tokens": 1000, "keep_tool_results": 2}
    settings = daemon_settings(tmp_path, model_server.base_url, context=context)
    async with harness(settings) as h:
        async with watch_feed(h) as feed:
            await h.daemon.dispatcher.submit(stranger_event("please run echo"))
            approval = await feed.wait_for(lambda i: i["type"] == "approval")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        lines = [f"line {i} " + "x" * 190 for i in range(40)]
        (tmp_path / "workspace" / "big.txt").write_text("\n".join(lines))
        for step in range(20):  # enough to compact the held call away
            await drive(h, f"step {step}")
        status = (await h.client.get("/api/status")).json()["sessions"]["main"]["context"]
        assert status["compactions"] >= 1 and status["compacted_before"] > 3
        answer = await h.client.post(
            f"/api/approvals/{approval['id']}", json={"decision": "approve"}
        )
        assert answer.status_code == 200
        body = await wait_for_request_with(model_server, "approved by the owner and run once")
    assert model_server.too_long == []
    late = [
        m for m in body["messages"] if "approved by the owner and run once" in str(m.get("content"))
    ]
    assert late and "later" in late[0]["content"]  # its real result, after the boundary


async def test_the_summary_keeps_promised_results_by_code() -> None:
    from wakeful.core.context.compaction import write_summary
    from wakeful.core.trajectory.placeholders import interrupted_placeholder

    placeholder = interrupted_placeholder(
        tool="shell_exec", call_id="call_7", elapsed_s=3, cause="a new message", cancelled=False
    )
    messages = [
        {"role": "user", "content": "build it"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_7", "type": "function",
            "function": {"name": "shell_exec", "arguments": "{}"},
        }]},
        {"role": "tool", "tool_call_id": "call_7", "content": placeholder},
    ]  # fmt: skip

    async def summarize(text: str) -> str:
        assert "build it" in text and "→ shell_exec({})" in text
        return "The user asked to build it."

    summary = await write_summary(summarize, messages, max_chars=10_000)
    assert summary.startswith("The user asked to build it.")
    assert "results promised for calls call_7 may still arrive" in summary


def long_summaries(body: dict[str, Any]) -> Reply:
    """A model whose summaries never shrink anything: it repeats what it was shown,
    twice. Every other request gets a short answer."""
    if is_summary_request(body):
        return text_reply(body["messages"][1]["content"] * 2)
    return text_reply("noted")


def summary_requests(model_server: FakeModelServer) -> int:
    return sum(1 for r in model_server.requests if is_summary_request(r.body))


async def send_and_settle(h: Harness, text: str) -> list[dict[str, Any]]:
    """The alerts of the run that ``text`` starts."""
    async with watch_feed(h) as feed:
        await h.send(text)
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", timeout_s=30)
    return [i for i in feed.items if i["type"] == "alert"]


async def test_compactions_that_do_not_shrink_trip_the_breaker_across_events(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Each over-budget message would ask for a summary that helps nothing; after 3 in
    a row (the default) the session asks for none until the operator resets it, and
    every run says why, naming the session."""
    model_server.responder = long_summaries
    context = {"max_tokens": 10000, "reserve_tokens": 1000, "keep_user_messages": 2}
    settings = daemon_settings(tmp_path, model_server.base_url, context=context, safety=SHELL_ALLOW)
    note = "x" * 2400  # ~600 tokens a message: the budget fills after a handful
    async with harness(settings) as h:
        alerts: list[dict[str, Any]] = []
        for step in range(14):
            alerts += await send_and_settle(h, f"note {step}: {note}")
        tripped = summary_requests(model_server)
        status = (await h.client.get("/api/status")).json()["sessions"]["main"]["context"]
        answer = await h.client.post("/api/sessions/main/context/reset")
        after_reset = await send_and_settle(h, f"note 14: {note}")
        unknown = await h.client.post("/api/sessions/nobody/context/reset")
    assert tripped == 3  # bounded: three summaries, then none for eleven more messages
    assert status["compaction_breaker"] == "open" and status["failed_compactions"] == 3
    assert "session main" in status["last_problem"]
    stopped = [a["text"] for a in alerts if "run stopped" in a["text"]]
    assert "did not shrink the request" in stopped[0]
    assert "the compaction breaker is open" in stopped[-1]
    assert "session main's context cannot fit" in stopped[-1]
    assert "`wakeful context reset main`" in stopped[-1]
    assert answer.json() == {"session": "main", "had_failures": True}
    assert summary_requests(model_server) == 4  # the reset let exactly one more through
    assert "session main's context cannot fit" in after_reset[-1]["text"]
    assert unknown.status_code == 404


def test_the_breaker_cools_down_to_one_try() -> None:
    from wakeful.core.context.breaker import CompactionBreaker, closed
    from wakeful.core.context.view import ContextView

    now = [1000.0]
    breaker = CompactionBreaker(failures_to_trip=2, cooldown_s=60, clock=lambda: now[0])
    view = breaker.failed(ContextView())
    assert breaker.state(view) == "closed" and breaker.refusal(view, "s") is None
    view = breaker.failed(view)
    assert breaker.state(view) == "open"
    assert "tried again in 60 s" in (breaker.refusal(view, "s") or "")
    now[0] += 61
    assert breaker.state(view) == "half-open" and breaker.refusal(view, "s") is None
    view = breaker.failed(view)  # the one try failed: open again at once
    assert breaker.state(view) == "open" and view.failed_compactions == 3
    assert breaker.state(closed(view)) == "closed"
    assert ContextView.from_json(view.to_json()) == view  # kept in the store as it is


def test_status_line_shows_an_open_breaker() -> None:
    from wakeful.cli.status import context_line

    line = context_line(
        {"tokens": 9100, "budget": 8000, "compaction_breaker": "open", "failed_compactions": 3}
    )
    assert line == "9100 of 8000 tokens, compaction breaker open after 3 failed compactions"


@pytest.mark.parametrize(
    ("window", "reserve"), [(8_192, 1024), (16_000, 2000), (32_768, 4096), (128_000, 8192)]
)
def test_the_default_reserve_scales_with_the_window(window: int, reserve: int) -> None:
    """Only the window set: an 8k model gets a budget (a fixed 8192 left it 0); a set
    reserve is used as it is."""
    from wakeful.core.context.config import ContextSection

    assert ContextSection(max_tokens=window).reserve(window) == reserve
    assert ContextSection(max_tokens=window, reserve_tokens=300).reserve(window) == 300


THIRTY_KB = "od -v -A n -t x1 -N 10000 /dev/zero"


def thirty_kb_agent(body: dict[str, Any]) -> Reply:
    """Each user step: one shell call printing 30 kB, then "done <step>"."""
    messages = body["messages"]
    if is_summary_request(body):
        return text_reply("The user asked for numbered steps; each ran a shell command.")
    last = [m for m in messages if m["role"] != "system"][-2]  # before the status bar
    if last["role"] == "tool":
        users = [m for m in messages if m["role"] == "user" and "] step " in str(m["content"])]
        return text_reply("done " + str(users[-1]["content"]).rsplit("] step ", 1)[-1])
    return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": THIRTY_KB})])


# 120 turns take ~2 minutes a window (a real shell call each turn), so the main suite runs 30
# turns at every window (each still passes several compactions at 8k and 16k) and the slow
# set (scripts/soak.sh) runs the full 120.
WINDOWS = [8_192, 16_000, 32_768, 128_000]
TURN_COUNTS = [30, pytest.param(120, marks=pytest.mark.slow)]


@pytest.mark.parametrize("turns", TURN_COUNTS)
@pytest.mark.parametrize("window", WINDOWS)
async def test_defaults_answer_every_turn_at_any_window(
    tmp_path: Path, model_server: FakeModelServer, window: int, turns: int
) -> None:
    """DEFAULTS ONLY (the window set, nothing tuned): every turn, each with a 30 kB tool
    result, is answered, none over the model's window, compacting rarely."""
    model_server.responder = thirty_kb_agent
    model_server.context_window = window
    settings = daemon_settings(
        tmp_path, model_server.base_url, context={"max_tokens": window}, safety=SHELL_ALLOW
    )
    async with harness(settings) as h:
        for step in range(turns):
            await drive(h, f"step {step}")
        status = (await h.client.get("/api/status")).json()["sessions"]["main"]["context"]
        full = (await h.client.get("/api/sessions/main/trajectory?full=1")).json()["messages"]
    answers = [m["content"] for m in full if m["role"] == "assistant" and m.get("content")]
    answered = sum(f"done {step}" in answers for step in range(turns))
    print(
        f"\nwindow {window}: {answered}/{turns} turns answered, "
        f"{status['compactions']} compactions, {status['prunes']} prunes, "
        f"{len(model_server.too_long)} refused as too long, fixed part "
        f"{status.get('fixed_tokens')} tokens"
    )
    assert answered == turns, status
    assert model_server.too_long == [] and status["last_problem"] is None
    if window >= 16_000:  # at 8k the resident tools alone take ~70 % of the budget
        assert status["compactions"] <= turns // 10, status  # at most once per ~10 turns


def one_turn(result: str) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function",
            "function": {"name": "shell_exec", "arguments": "{}"}}  # fmt: skip
    return [
        {"role": "user", "content": "step 0"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": result},
    ]


def saved_files(directory: Path, prefix: str) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.startswith(prefix)]


async def never_summarize(text: str) -> str:
    raise AssertionError("one user message: nothing to compact")


async def test_a_result_too_big_for_the_room_left_is_trimmed_not_refused(tmp_path: Path) -> None:
    """The 16k case of the issue, defaults only: a fixed part of ~7,250 tokens and one
    5 kB result. The result is cut to head + tail (the full text kept in a file the
    request names) and the request fits; before, every later turn was refused."""
    from wakeful.core.context.config import ContextSection
    from wakeful.core.context.session_context import SessionContext
    from wakeful.store.memory_state import MemoryState

    context = SessionContext(
        "main", MemoryState(), ContextSection(max_tokens=16000), window=16000,
        output_dir=tmp_path, summarize=never_summarize,
    )  # fmt: skip
    fixed = ["s" * 29_000 + "t" * 24_000]  # ~13,250 tokens: tools the surface did not defer
    result = "".join(f"line {i} " + "x" * 90 + "\n" for i in range(50))
    messages = await context.fit(one_turn(result), fixed)
    assert context.last_estimate <= context.budget
    trimmed = str(messages[-1]["content"])
    assert trimmed.startswith("[trimmed to fit the context] line 0 ") and "line 49 " in trimmed
    saved = saved_files(tmp_path, "trimmed-main-call_1")
    assert len(saved) == 1 and saved[0].read_text() == result and str(saved[0]) in trimmed


async def test_what_cannot_fit_is_named(tmp_path: Path) -> None:
    """A fixed part larger than the budget: the refusal says what takes the room, and
    that one user message cannot be compacted (not "the newest 5 ... do not fit")."""
    from wakeful.core.context.config import ContextSection
    from wakeful.core.context.session_context import ContextFull, SessionContext
    from wakeful.store.memory_state import MemoryState

    context = SessionContext(
        "main", MemoryState(), ContextSection(max_tokens=8192), window=8192,
        output_dir=tmp_path, summarize=never_summarize,
    )  # fmt: skip
    with pytest.raises(ContextFull) as refused:
        await context.fit(one_turn("ok"), ["s" * 40_000])
    message = str(refused.value)
    assert "the system prompt, tool schemas and status bar take about 10001 tokens" in message
    assert "over the budget of 7168 (a 8192-token window less 1024 kept for the reply)" in message
    assert "no compaction: 1 user message since the last boundary" in message
    assert "newest 5 user messages alone" not in message


async def test_a_fixed_part_over_a_third_of_the_window_defers_tools(tmp_path: Path) -> None:
    """[tools] defer = "auto" (every schema below defer_above tools), measured at
    start-up: the default tools at 16k take over a third of the window, so the
    non-resident ones are deferred (found with search_tools) and status says it; at
    128k nothing changes. (defer_above is raised past the default tools' count, 31 with
    memory's, which would defer them by number alone: this test is of the window.)"""
    for window, deferred in ((16_000, True), (128_000, False)):
        settings = daemon_settings(tmp_path / str(window), "http://127.0.0.1:9", context={
            "max_tokens": window}, tools={"defer": "auto", "defer_above": 100})  # fmt: skip
        async with harness(settings) as h:
            status = (await h.client.get("/api/status")).json()
        fixed = status["fixed_part"]
        assert fixed["auto_deferred"] is deferred, fixed
        assert fixed["fixed_tokens"] < fixed["all_tools_tokens"] or not deferred, fixed
        over = fixed["fixed_tokens"] * 3 > window  # the resident block alone may still be
        assert (fixed["warning"] is not None) is over, fixed
        if over:
            assert "more than a third of the 16000-token window" in fixed["warning"]


async def test_by_default_the_fixed_part_fits_an_8k_window(tmp_path: Path) -> None:
    """Every [tools] setting at its default: the resident block is all a request
    carries, so even an 8k model's window keeps two thirds for the conversation."""
    settings = daemon_settings(tmp_path, "http://127.0.0.1:9", context={"max_tokens": 8192})
    async with harness(settings) as h:
        fixed = (await h.client.get("/api/status")).json()["fixed_part"]
    assert fixed["deferring"] is True and fixed["auto_deferred"] is False, fixed
    assert fixed["fixed_tokens"] * 3 <= 8192 and fixed["warning"] is None, fixed
