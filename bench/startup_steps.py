"""Start-up step by step: where start → READY goes, on the embedded defaults.

Each run is a fresh process (imports are part of what is measured) that does what
``wakeful run`` does up to READY, timing each step: the imports (the CLI, the
config, the daemon), reading the config, then the lifespan's steps as
:mod:`wakeful.app.lifespan` calls them (open the resources, import and build the
components, arm safety and the tools, configure the components, start the core,
run the components, serve HTTP). Rows: the median wall and CPU time of each step
over ``--runs`` runs; CPU time is steadier on a machine shared with other work.
What ``bench.startup`` measures from outside (READY over NOTIFY_SOCKET) is the
total; this says which step to look at.

The collector is paused as ``wakeful run`` pauses it (serving switches it on), and
bytecode is cached first by one uncounted run, as in ``bench.startup``.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
# The lifespan's steps, by the name lifespan.py calls them under.
STEPS = (
    "open_resources",
    "default_components",
    "arm",
    "configure_all",
    "start_core",
    "run_all",
    "serve_http_app",
)
# The lifespan's own lines around its steps (the data_dir lock, tracing, logging READY).
BETWEEN = "(the lifespan between steps)"


class Clock:
    """Wall and CPU time of named steps, in the order they ran."""

    def __init__(self) -> None:
        self.steps: dict[str, tuple[float, float]] = {}
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def lap(self, name: str) -> None:
        """The time since the last lap, added to ``name``'s."""
        wall, cpu = time.perf_counter(), time.process_time()
        before = self.steps.get(name, (0.0, 0.0))
        self.steps[name] = (before[0] + wall - self._wall, before[1] + cpu - self._cpu)
        self._wall, self._cpu = wall, cpu

    def timed(self, name: str, step: Callable[..., Any]) -> Callable[..., Any]:
        def sync(*args: Any, **kwargs: Any) -> Any:
            self.lap(BETWEEN)
            result = step(*args, **kwargs)
            self.lap(name)
            return result

        async def asynchronous(*args: Any, **kwargs: Any) -> Any:
            self.lap(BETWEEN)
            result = await step(*args, **kwargs)
            self.lap(name)
            return result

        return asynchronous if inspect.iscoroutinefunction(step) else sync


def child(codegen: bool) -> None:
    """One start up to READY, printed as JSON {step: [wall, cpu]}."""
    gc.disable()  # as `wakeful run` does (wakeful/cli/main.py)
    clock = Clock()
    if codegen:  # first, as the wakeful command does
        from wakeful.cli.entry import prepare

        prepare("daemon")
        clock.lap("install the codegen cache")
    import wakeful.cli.main  # noqa: F401

    clock.lap("import wakeful.cli.main")
    from wakeful.app.config import load_settings

    clock.lap("import wakeful.app.config")
    import anyio

    from wakeful.app import lifespan
    from wakeful.app.service import run_daemon  # noqa: F401

    clock.lap("import wakeful.app.service")
    settings = load_settings(None)
    clock.lap("load_settings")
    for name in STEPS:
        setattr(lifespan, name, clock.timed(name, getattr(lifespan, name)))

    async def start() -> None:
        async with lifespan.running_daemon(settings) as running:
            clock.lap(BETWEEN)  # READY would be sent now
            print(json.dumps(clock.steps), flush=True)
            running.daemon.dispatcher.stopping = True

    anyio.run(start, backend_options={"use_uvloop": True})


def run_once(env: dict[str, str], codegen: bool) -> dict[str, tuple[float, float]]:
    flags = [] if codegen else ["--bare"]
    out = subprocess.run(
        [sys.executable, "-m", "bench.startup_steps", "--child", *flags],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    ).stdout
    data: dict[str, tuple[float, float]] = json.loads(out.strip().splitlines()[-1])
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs (default 5)")
    parser.add_argument(
        "--bare",
        action="store_true",
        help="a baseline: start without what the wakeful command sets up first "
        "(wakeful/cli/entry.py: the codegen cache, pydantic plugins off)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    codegen = not args.bare
    if args.child:
        child(codegen)
        return
    with (
        tempfile.TemporaryDirectory(prefix="wakeful-steps-pyc-") as pycache,
        tempfile.TemporaryDirectory(prefix="wakeful-steps-") as work,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env |= {
            "PYTHONPYCACHEPREFIX": pycache,
            "WAKEFUL_SERVER__BIND": "127.0.0.1:0",
            "NO_COLOR": "1",
        }

        def fresh(index: int) -> dict[str, tuple[float, float]]:
            # A fresh data directory each run, as bench.startup's first start.
            data_dir = {"WAKEFUL_DAEMON__DATA_DIR": str(Path(work) / str(index))}
            return run_once(env | data_dir, codegen)

        fresh(-1)  # warm-up, not counted: fills the bytecode cache (and the codegen cache)
        runs = [fresh(i) for i in range(args.runs)]
    print(f"runs: {args.runs}; load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"{'step':<38} {'wall':>9} {'cpu':>9}  (median ms)")

    def row(name: str, pairs: list[tuple[float, float]]) -> None:
        wall = statistics.median(p[0] for p in pairs) * 1000
        cpu = statistics.median(p[1] for p in pairs) * 1000
        print(f"{name:<38} {wall:>9.1f} {cpu:>9.1f}")

    for name in runs[0]:
        row(name, [r[name] for r in runs if name in r])
    totals = [(sum(s[0] for s in r.values()), sum(s[1] for s in r.values())) for r in runs]
    row("total (less the interpreter's start)", totals)


if __name__ == "__main__":
    main()
