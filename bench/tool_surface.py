"""What deferral saves: the tool block of a request with 200 integration tools.

The baseline, in the same run, is the same registry with ``[tools] defer =
"never"``: every schema in every request. Deferred, a request carries the
resident schemas, plus what the session loaded, and the system prompt gains a
listing of the deferred names — counted here too, since it is paid in every
request as well. Tokens are estimated as JSON characters / 4 (tiktoken is not
installed offline; the ratio is what matters). Target: the block >= 70 % smaller.

Also: search_tools' top-3 hit rate on the 22 needs of tests/test_tool_surface.py
(written before the ranking was tuned), on the 12 below (written after its first
tuning, never tuned on) and on the test's 11 HELD_OUT_NEEDS (written before its
second tuning, never tuned on); its latency through the registry, and the cost
of building its index (once per daemon, at the first search).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, print_table, timed
from tests.fakes.tool_set import fake_tool_set
from tests.test_tool_surface import HELD_OUT_NEEDS, NEEDS, context
from wakeful.core.tool_registry import ToolRegistry
from wakeful.store.memory_state import MemoryState
from wakeful.tools.registry import default_registry
from wakeful.tools.search_tools import SearchTools, _document
from wakeful.tools.tool_index import ToolIndex
from wakeful.tools.tool_surface import ToolSurface
from wakeful.tools.tools_config import DeferMode

HELD_OUT = {
    "reply to a customer's ticket with the fix": "comment_on_ticket",
    "how much money is in our merchant account": "get_balance",
    "stop charging this customer every month": "cancel_subscription",
    "roll the new version of checkout to staging": "deploy_service",
    "check whether the signers finished the document": "get_signature_status",
    "add Priya to the design channel": "invite_to_channel",
    "make a discount for black friday": "create_discount_code",
    "show me last quarter's profit": "get_profit_and_loss",
    "how do I drive to the airport from the office": "get_directions",
    "quiet the disk alert during maintenance": "silence_alert",
    "set up the first day checklist for Tom, our new hire": "start_onboarding",
    "move five units from the Hamburg to the Munich warehouse": "transfer_stock",
}


def build(defer: DeferMode) -> tuple[ToolRegistry, ToolSurface]:
    registry = default_registry()
    surface = ToolSurface(registry, MemoryState(), defer=defer)
    registry.register(SearchTools(registry, surface))
    for tool in fake_tool_set():
        registry.register(tool)
    registry.freeze()
    return registry, surface


def tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return len(text) // 4


async def hit_rate(
    registry: ToolRegistry, needs: dict[str, str], work: Path
) -> tuple[int, list[str]]:
    missed = []
    for need, wanted in needs.items():
        output = await registry.execute(
            "search_tools", json.dumps({"query": need, "limit": 3}), context(work, need)
        )
        if wanted not in output.data.get("matches", []):
            missed.append(f"{need!r} (wanted {wanted}, got {output.data.get('matches')})")
    return len(needs) - len(missed), missed


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as work:
        await measure(n, Path(work))


async def measure(n: int, work: Path) -> None:
    full_registry, full = build("never")
    registry, deferred = build("always")
    baseline = await full.tools_for("s")
    resident = await deferred.tools_for("s")
    listing = deferred.deferred_listing()
    await deferred.load("s", ["assign_ticket", "create_event", "create_invoice", "post_message"])
    loaded = await deferred.tools_for("s")
    base_tokens = tokens(baseline)
    rows = [
        ["defer off (baseline)", str(len(baseline)), str(base_tokens), "0", str(base_tokens), "-"],
    ]
    for label, tools in (("deferred, first request", resident), ("deferred, 4 loaded", loaded)):
        total = tokens(tools) + tokens(listing)
        saved = 100 * (1 - total / base_tokens)
        rows.append(
            [
                label,
                str(len(tools)),
                str(tokens(tools)),
                str(tokens(listing)),
                str(total),
                f"{saved:.1f} %",
            ]
        )
    print(f"{len(full_registry.names())} tools registered; tokens ~ JSON characters / 4")
    print_table(["request", "schemas", "tools tokens", "listing tokens", "total", "smaller"], rows)
    print()
    sets = (
        ("needs of the test (tuned on)", NEEDS),
        ("held out of the first tuning", HELD_OUT),
        ("held out of the second tuning", HELD_OUT_NEEDS),
    )
    for label, needs in sets:
        hits, missed = await hit_rate(registry, needs, work)
        print(f"search_tools top-3, {label}: {hits}/{len(needs)}")
        for line in missed:
            print(f"  missed: {line}")
    print()
    query = json.dumps({"query": "give this ticket to Maria", "limit": 3})
    search = await timed(n, lambda: registry.execute("search_tools", query, context(work, "t")))
    get_time = await timed(n, lambda: registry.execute("get_time", "{}", context(work, "t")))
    documents = [_document(registry.definition(name)) for name in registry.names()]

    async def build_index() -> None:
        ToolIndex(documents)

    index = await timed(max(5, n // 20), build_index)
    print_table(
        LATENCY_HEADER,
        [
            ms_row(f"search_tools, {len(registry.names())} tools", search),
            ms_row("get_time (baseline)", get_time),
            ms_row(f"index build, {len(documents)} tools (once)", index),
        ],
    )


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 300).parse_args()
    anyio.run(main, args.n)
