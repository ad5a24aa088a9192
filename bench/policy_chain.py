"""The policy chain's cost per tool call, next to the same call without it.

Each call goes through ``ToolRegistry.execute`` (parsing, timeout scope, output
shaping), once on a registry without a policy (the baseline, same run) and once
guarded by the daemon's chain (taint read from a real SQLite store, confinement
with symlink resolution, allowlist, taint gate, reviewer rules; no model
reviewer). Measured for ``get_time`` (read), ``read_file`` (a path to resolve)
and, for the decision alone, ``PolicyChain.rule`` on a shell call (the reviewer's
command rules). Target: chain overhead <= 1 ms p99.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, percentile, print_table, timed
from tests.test_handlers_tools import make_ctx
from wakeful.app.config import StoreSection
from wakeful.core.effects import Effect, Reach
from wakeful.safety.assembly import build_safety
from wakeful.safety.config import SafetySection
from wakeful.safety.ruling import PolicyCall
from wakeful.store.factory import open_store
from wakeful.tools.registry import default_registry


async def timed_warm(n: int, call: Callable[[], Awaitable[object]]) -> list[float]:
    return await timed(n, call, warm_up=20)  # caches and imports first


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        ctx = make_ctx(data_dir)
        (ctx.workspace / "notes.txt").write_text("one\ntwo\nthree\n")
        store = await open_store(StoreSection(), data_dir)
        try:
            bare = default_registry()
            guarded = default_registry()
            safety = build_safety(SafetySection(), store, data_dir=data_dir)
            guarded.guard_with(safety.chain)
            shell = PolicyCall(
                session="main",
                call_id="call_1",
                tool="shell_exec",
                effect=Effect.SHELL,
                arguments={"command": "pytest -q tests/test_api.py && git status"},
                reach=Reach(command="pytest -q tests/test_api.py && git status"),
                taint=None,
                workspace=ctx.workspace,
                output_dir=ctx.output_dir,
            )
            read = '{"path": "notes.txt"}'
            rows = []
            overheads = []
            for label, name, args in (
                ("get_time", "get_time", "{}"),
                ("read_file", "read_file", read),
            ):
                plain = await timed_warm(n, lambda: bare.execute(name, args, ctx))  # noqa: B023
                checked = await timed_warm(n, lambda: guarded.execute(name, args, ctx))  # noqa: B023
                rows.append(ms_row(f"{label}, no policy (baseline)", plain))
                rows.append(ms_row(f"{label}, through the chain", checked))
                overheads.append((label, plain, checked))
            rows.append(
                ms_row(
                    "chain decision alone, shell call",
                    await timed_warm(n, lambda: safety.chain.rule(shell)),
                )
            )
        finally:
            await store.aclose()
    print_table(LATENCY_HEADER, rows)
    print()
    for label, plain, checked in overheads:
        p50 = (percentile(checked, 50) - percentile(plain, 50)) * 1000
        p99 = (percentile(checked, 99) - percentile(plain, 99)) * 1000
        print(f"chain overhead, {label}: p50 {p50:+.3f} ms, p99 {p99:+.3f} ms")


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 2000).parse_args()
    anyio.run(main, args.n)
