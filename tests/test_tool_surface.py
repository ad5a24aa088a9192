"""Deferred tools: with 200 integration tools a request carries the resident schemas
only, a deferred tool works when called by name, and search_tools finds tools for
needs said in other words."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.daemon_harness import Harness, daemon_settings, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.fakes.tool_set import FakeIntegrationTool, fake_tool_set
from tests.test_scenarios import side_or_main
from wakeful.app.config import Settings
from wakeful.app.lifespan import running_daemon
from wakeful.core.components.context import ComponentSetup
from wakeful.core.loop.parallel import SIDE_QUESTION_NOTE
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.tool import ToolContext
from wakeful.core.tool_registry import ToolRegistry
from wakeful.store.memory_state import MemoryState
from wakeful.tools.registry import default_registry
from wakeful.tools.search_tools import SearchTools
from wakeful.tools.tool_surface import ToolSurface
from wakeful.tools.tool_words import TIME_WEIGHT, stem, terms, words

pytestmark = pytest.mark.anyio

# Needs written before the ranking was tuned, in words other than the tools' own
# where a user would say it differently; the ranking finds every one in its top 3.
NEEDS = {
    "give this ticket to Maria": "assign_ticket",
    "assign a ticket": "assign_ticket",
    "put a meeting with Bob on my calendar for Tuesday": "create_event",
    "when are Ana and Luis both free for half an hour": "find_free_slot",
    "bill Acme for last month's consulting": "create_invoice",
    "give the customer their money back": "refund_payment",
    "which invoices have not been paid yet": "list_overdue_invoices",
    "start a new git branch for the fix": "create_branch",
    "ask to merge my branch into main": "open_pull_request",
    "undo the last production release of the api": "rollback_deploy",
    "who is paged tonight for the payments team": "get_on_call",
    "book a seat on a plane to Lisbon": "book_flight",
    "I need a room in Berlin for two nights": "search_hotels",
    "note down the phone conversation I had with the client": "log_call",
    "apply for vacation next week": "request_time_off",
    "get reimbursed for a taxi receipt": "submit_expense",
    "lock out the account of someone who left": "disable_user",
    "have the contract signed electronically": "send_for_signature",
    "which products are about to run out": "list_low_stock",
    "send a message to the team channel": "post_message",
    "will it rain in Porto tomorrow": "get_weather",
    "file a bug in the repo": "create_issue",
}

# Needs written before the ranking's second tuning (issue 13's leftovers) and never
# tuned on: the test measures how well the ranking generalises, not what it memorised.
HELD_OUT_NEEDS = {
    "who has been logging into the admin panel lately": "list_audit_log",
    "turn on my auto-reply while I'm away": "set_out_of_office",
    "sign Jana out of her laptop and phone": "revoke_sessions",
    "how long has the checkout service been up this month": "get_uptime",
    "order more paper from our supplier": "create_purchase_order",
    "push back the deadline of the migration task to Friday": "update_task_due_date",
    "is the CI build green": "get_build_status",
    "get me a car at the Lisbon airport": "rent_car",
    "what did I earn in March": "get_payslip",
    "end our agreement with the cleaning company": "terminate_contract",
    "how many people opened the newsletter": "get_campaign_stats",
}


class Integrations:
    """A component bringing the 200-tool set, as an MCP bridge would."""

    name = "integrations"

    def __init__(self) -> None:
        self.tools = fake_tool_set()

    def tool(self, name: str) -> FakeIntegrationTool:
        return next(t for t in self.tools if t.name == name)

    async def configure(self, setup: ComponentSetup) -> None:
        for tool in self.tools:
            setup.add_tool(tool)

    async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()


@asynccontextmanager
async def daemon(settings: Settings, integrations: Integrations) -> AsyncIterator[Harness]:
    async with running_daemon(settings, components=[integrations]) as running:
        headers = {"Authorization": f"Bearer {running.admin_token}"}
        async with httpx.AsyncClient(base_url=running.url, headers=headers) as client:
            yield Harness(running, client)


def big_registry() -> tuple[ToolRegistry, ToolSurface]:
    registry = default_registry()
    surface = ToolSurface(registry, MemoryState())
    registry.register(SearchTools(registry, surface))
    for tool in fake_tool_set():
        registry.register(tool)
    registry.freeze()
    return registry, surface


def context(tmp_path: Path, session: str = "s") -> ToolContext:
    return ToolContext(
        session=session,
        call_id="call_1",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        tasks=CombinedTaskView([]),
        outbox=None,  # type: ignore[arg-type]  # these tools never talk to the user
    )


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


async def test_first_request_with_200_tools_carries_at_most_30_schemas(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A deferred tool called by name on turn 1 runs through the policy chain (its
    third-party result taints the session); the next request appends its schema
    after a resident block whose bytes did not change."""
    integrations = Integrations()
    model_server.push(
        Reply(
            tool_calls=[ToolCallSpec("assign_ticket", {"ticket_id": "T-7", "assignee": "maria"})]
        ),
        Reply(text="Assigned."),
    )
    async with daemon(daemon_settings(tmp_path, model_server.base_url), integrations) as h:
        async with watch_feed(h) as feed:
            await h.send("give ticket T-7 to Maria")
            await feed.wait_for(lambda i: i["type"] == "reply")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        taint = await h.running.safety.taints.get("main")
    first, second = (r.body for r in model_server.requests)
    assert len(first["tools"]) <= 30
    assert "assign_ticket" not in names(first["tools"])
    system = first["messages"][0]["content"]
    assert "Other tools (call by name" in system
    assert "tickets: assign_ticket, close_ticket, comment_on_ticket" in system
    assert all(tool.name in system for tool in integrations.tools)
    assert integrations.tool("assign_ticket").calls == [{"ticket_id": "T-7", "assignee": "maria"}]
    assert taint is not None and "integration assign_ticket" in taint.summary()
    assert names(second["tools"]) == [*names(first["tools"]), "assign_ticket"]
    resident = len(first["tools"])
    assert json.dumps(second["tools"][:resident]) == json.dumps(first["tools"])
    assert second["messages"][0] == first["messages"][0]


async def test_loaded_tools_survive_a_restart(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The loaded tail is in the store: after a restart the session's next request
    carries the same tools array."""
    settings = daemon_settings(tmp_path, model_server.base_url)
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("get_weather", {"location": "Porto"})]),
        Reply(text="Sunny."),
    )
    async with daemon(settings, Integrations()) as h:
        async with watch_feed(h) as feed:
            await h.send("weather in Porto?")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        before = (await h.daemon.dispatcher.sessions.get("main").next_request()).tools
    async with daemon(settings, Integrations()) as h:
        after = (await h.daemon.dispatcher.sessions.get("main").next_request()).tools
    assert names(after)[-1] == "get_weather"
    assert json.dumps(after) == json.dumps(before)


RESIDENT = [
    "shell_exec",
    "read_file",
    "write_file",
    "edit_file",
    "reply_to_user",
    "send_user_notification",
    "search_tools",
    "update_plan",  # the status bar shows the plan and points at it
]
FIXED_PART_MAX_TOKENS = 2_500  # the target for the default tools (issue 21, finding 4)


async def test_by_default_a_request_carries_the_small_resident_block(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Every setting at its default: the tools array is the resident block (files, a
    command, talking to the user, search_tools), every other tool is named in the system
    prompt, and system prompt + schemas stay within 2,500 tokens (characters / 4)."""
    settings = daemon_settings(tmp_path, model_server.base_url)
    async with running_daemon(settings) as running:
        request = await running.daemon.dispatcher.sessions.get("main").next_request()
        registry = running.registrations.tools
    assert sorted(names(request.tools)) == sorted(RESIDENT)
    system = request.messages[0]["content"]
    assert system.startswith(settings.daemon.system_prompt)
    listing = system.split("Other tools", 1)[1]
    # report_to_parent is only a subagent's: the main session is not told of it.
    deferred = [n for n in registry.names() if n not in [*RESIDENT, "report_to_parent"]]
    assert len(deferred) >= 15
    missing = [name for name in deferred if not re.search(rf"\b{name}\b", listing)]
    assert missing == [], listing
    fixed_chars = len(json.dumps(request.tools)) + len(system)
    assert fixed_chars / 4 <= FIXED_PART_MAX_TOKENS


async def test_below_the_threshold_auto_sends_every_schema_as_before(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """[tools] defer = "auto" with fewer tools than defer_above: deferral stays off, the
    tools array is exactly the registry's definitions (the bytes of the golden request),
    without search_tools, and the system prompt is the configured one. (defer_above is
    raised past the default tools' count, 31 with memory's: the test is of "below".)"""
    tools = {"defer": "auto", "defer_above": 100}
    settings = daemon_settings(tmp_path, model_server.base_url, tools=tools)
    async with running_daemon(settings) as running:
        request = await running.daemon.dispatcher.sessions.get("main").next_request()
        registry = running.registrations.tools
    assert "search_tools" in registry.names()
    expected = [t for t in registry.definitions() if t["function"]["name"] != "search_tools"]
    assert json.dumps(request.tools) == json.dumps(expected)
    assert request.messages[0]["content"] == settings.daemon.system_prompt


async def test_defer_never_sends_all_200(tmp_path: Path, model_server: FakeModelServer) -> None:
    """[tools] defer = "never" keeps today's behaviour at any count."""
    settings = daemon_settings(tmp_path, model_server.base_url, tools={"defer": "never"})
    async with daemon(settings, Integrations()) as h:
        request = await h.daemon.dispatcher.sessions.get("main").next_request()
    assert len(request.tools) >= 200
    assert "Other tools" not in request.messages[0]["content"]


async def test_unknown_tool_still_gets_the_existing_error(tmp_path: Path) -> None:
    registry, surface = big_registry()
    output = await registry.execute("assign_tickets", "{}", context(tmp_path))
    assert output.is_error
    assert output.text.startswith("unknown tool 'assign_tickets'; the available tools are:")
    assert await surface.loaded("s") == []


async def test_a_deferred_call_with_bad_arguments_still_loads_its_schema(tmp_path: Path) -> None:
    """The model guessed the arguments wrong: the error names the fields, and the
    schema is in the next request so the retry can be right."""
    registry, surface = big_registry()
    output = await registry.execute("close_ticket", '{"id": "T-1"}', context(tmp_path))
    assert output.is_error and "ticket_id" in output.text
    assert names(await surface.tools_for("s"))[-1] == "close_ticket"
    assert names(await surface.tools_for("other")) == names(surface.resident_definitions())


async def test_search_tools_returns_schemas_and_loads_them(tmp_path: Path) -> None:
    registry, surface = big_registry()
    output = await registry.execute(
        "search_tools", '{"query": "assign a ticket", "limit": 3}', context(tmp_path)
    )
    assert not output.is_error
    assert output.data["matches"][0] == "assign_ticket"
    assert '"assignee"' in output.text  # the schema, as text
    tail = names(await surface.tools_for("s"))[len(surface.resident_definitions()) :]
    assert tail == output.data["loaded"] == output.data["matches"]
    again = await registry.execute(
        "search_tools", '{"query": "give a ticket to someone", "limit": 3}', context(tmp_path)
    )
    assert "assign_ticket" in again.data["matches"]
    grown = names(await surface.tools_for("s"))[len(surface.resident_definitions()) :]
    assert grown == [*tail, *again.data["loaded"]]  # appended, never re-sorted
    assert "assign_ticket" not in again.data["loaded"]  # loaded once only


async def test_search_tools_says_plainly_when_nothing_matches(tmp_path: Path) -> None:
    registry, _ = big_registry()
    output = await registry.execute("search_tools", '{"query": "zxqv blorp"}', context(tmp_path))
    assert not output.is_error
    assert output.text.startswith("No tool matches 'zxqv blorp'. Try other words")


async def top_three_misses(registry: ToolRegistry, needs: dict[str, str], work: Path) -> list[str]:
    missed = []
    for need, wanted in needs.items():
        arguments = json.dumps({"query": need, "limit": 3})
        output = await registry.execute("search_tools", arguments, context(work, need))
        if wanted not in output.data.get("matches", []):
            missed.append(f"{need!r}: wanted {wanted}, got {output.data.get('matches')}")
    return missed


async def test_search_tools_finds_paraphrased_needs(tmp_path: Path) -> None:
    """The right tool is in the top 3 for every one of the 22 needs the ranking was
    tuned on, and for at least 6 of the 11 held out (6 when they were written; the
    misses need words no tool uses: "earn" for a payslip, "agreement" for a
    contract, "opened the newsletter" for campaign stats)."""
    registry, _ = big_registry()
    assert await top_three_misses(registry, NEEDS, tmp_path) == []
    held_out_missed = await top_three_misses(registry, HELD_OUT_NEEDS, tmp_path)
    hits = len(HELD_OUT_NEEDS) - len(held_out_missed)
    print(f"held-out needs in the top 3: {hits}/{len(HELD_OUT_NEEDS)}")
    assert hits >= 6, held_out_missed


async def test_phrases_and_word_forms_meet() -> None:
    """The words a search compares: verb forms fold onto the noun's stem, a phrase
    is one term wherever it is said, and time words count for less."""
    assert words("pages") == words("page") == ["page"]
    assert words("stopped stops") == ["stop", "stop"]
    assert words("paged") == ["on_call"]  # a word taken as written: someone was paged
    assert words("creates created creating") == [stem("create")] * 3
    assert words("get_on_call") == words("who is on call") == ["on_call"]
    assert words("running out of milk") == ["low_stock", "milk"]
    assert [t.weight for t in terms("invoice last month")] == [1.0, TIME_WEIGHT, TIME_WEIGHT]


async def test_resident_block_and_listing_are_byte_stable() -> None:
    """Two registries built alike give the same bytes; a caller's edit changes nothing."""
    first_registry, first = big_registry()
    _, second = big_registry()
    block = json.dumps(first.resident_definitions())
    edited = first.resident_definitions()
    edited[0]["function"]["description"] = "changed"
    assert json.dumps(first.resident_definitions()) == block
    assert json.dumps(second.resident_definitions()) == block
    assert first.deferred_listing() == second.deferred_listing()
    assert len(first.resident_definitions()) <= 30
    assert len(first_registry.names()) > 200


async def test_a_side_session_sends_the_main_loops_tools_array(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A question answered in parallel carries the same deferred tools array as the
    main loop (the cacheable prefix), not all 200 schemas."""
    gate = tmp_path / "workspace" / "gate"
    command = f"while [ ! -e {gate} ]; do sleep 0.05; done; echo build-done"
    model_server.push(Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})]))
    model_server.responder = side_or_main
    settings = daemon_settings(tmp_path, model_server.base_url)
    async with daemon(settings, Integrations()) as h, watch_feed(h) as feed:
        await h.send("run the build")
        await feed.wait_for(lambda i: i["type"] == "task" and i["state"] == "started")
        await h.send("what time is it?")
        await feed.wait_for(lambda i: i.get("text") == "It is 10:00 UTC.")
        gate.touch()
        await feed.wait_for(lambda i: i.get("text") == "The build finished: all green.")
    side = [r.body for r in model_server.requests if SIDE_QUESTION_NOTE in str(r.body)]
    main = model_server.requests[0].body
    assert side and len(main["tools"]) <= 30
    assert json.dumps(side[0]["tools"]) == json.dumps(main["tools"])
    # A deferred tool the side session called (get_time) is appended after the block.
    block = len(main["tools"])
    assert all(json.dumps(body["tools"][:block]) == json.dumps(main["tools"]) for body in side)


async def test_tools_joining_after_the_freeze_do_not_switch_deferral_on() -> None:
    """registry.add_deferred (an MCP server listing new tools) leaves the surface as it was
    decided at the freeze: below the threshold every tool stays in the block, nothing
    moves to a tail, while search_tools finds the newcomers."""
    registry = default_registry()
    surface = ToolSurface(registry, MemoryState(), defer="auto")
    search = SearchTools(registry, surface)
    registry.register(search)
    registry.freeze()
    block = surface.resident_definitions()
    assert not surface.deferring()
    for tool in fake_tool_set()[:40]:
        registry.add_deferred(tool)
    assert not surface.deferring() and surface.resident_definitions() == block
    assert await surface.loaded("s") == []
    found = await search.run(SearchTools.Args(query="assign a ticket"), context(Path("/tmp")))
    assert "assign_ticket" in found.data["matches"]
