"""Sandbox start cost: `true` through run_process, sandboxed vs not (issue 12).

Each iteration runs `true` three ways, interleaved so that machine noise hits all
alike: unsandboxed (`/bin/sh -c true`, the baseline), with the resource limits
only (`prlimit ... /bin/sh -c true`, sandbox = "none"), and in bubblewrap with the
limits (sandbox = "bubblewrap"; under root also setpriv to nobody). Timed from
the call to run_process until it returns (spawn, wait, group check, close).
Target: sandboxed `true` p99 <= 30 ms.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, percentile, print_table
from wakeful.safety.config import SafetySection
from wakeful.safety.sandbox import NO_SANDBOX, Sandbox, sandbox_from_settings
from wakeful.tools.child_env import child_environment
from wakeful.tools.process import run_process


async def timed_true(sandbox: Sandbox, workspace: Path) -> float:
    started = time.monotonic()
    result = await run_process(
        "true", cwd=workspace, env=child_environment(workspace), sandbox=sandbox
    )
    elapsed = time.monotonic() - started
    if result.exit_code != 0:
        raise SystemExit(f"`true` failed in {sandbox.kind}: {result.output.strip()}")
    return elapsed


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        workspace = data_dir / "workspace"
        workspace.mkdir()
        kinds = {
            "unsandboxed (baseline)": NO_SANDBOX,
            "limits only (none)": sandbox_from_settings(
                SafetySection(sandbox="none"), data_dir=data_dir, workspace=workspace
            ),
            "bubblewrap + limits": sandbox_from_settings(
                SafetySection(sandbox="bubblewrap"), data_dir=data_dir, workspace=workspace
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in kinds}
        for sandbox in kinds.values():  # warm the page cache for each binary
            await timed_true(sandbox, workspace)
        for _ in range(n):
            for name, sandbox in kinds.items():
                times[name].append(await timed_true(sandbox, workspace))
    print(f"`true` through run_process, {n} calls each, interleaved")
    print_table(LATENCY_HEADER, [ms_row(name, values) for name, values in times.items()])
    base = percentile(times["unsandboxed (baseline)"], 50)
    boxed = times["bubblewrap + limits"]
    print(
        f"\nbubblewrap / baseline at p50: {percentile(boxed, 50) / base:.1f}x; "
        f"bubblewrap p99 {percentile(boxed, 99) * 1000:.1f} ms (target <= 30 ms)"
    )


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", default_n=200).parse_args()
    anyio.run(main, args.n)
