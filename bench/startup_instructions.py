"""Start → READY in instructions executed: a comparison that other work cannot disturb.

On a machine shared with other work, wall and even CPU time of one start move by
tens of percent from run to run (caches, preemption), more than most start-up
changes save. The number of instructions the process executes barely moves (±0.1 %),
so two trees measured here compare in one run of a few each, at any load. It runs
``bench.startup_steps``' child (the imports, reading the defaults, the lifespan up to
READY, as ``wakeful run`` does) under valgrind's cachegrind (``--cache-sim=no``:
instructions only, ~50× slower), once uncounted to cache the bytecode, then
``--runs`` times. ``python -c pass`` in the same way is the interpreter's share.
The bwrap probes' child processes are not counted (valgrind follows no child).

Instructions are not milliseconds: on this machine ~4-5 million make a millisecond of
start-up, which the first table row of ``bench.startup_steps`` in the same run tells.
Needs valgrind (Debian's package ``valgrind``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def instructions(tree: Path, args: list[str], env: dict[str, str]) -> int:
    """Instructions one run of ``python ARGS`` in ``tree`` executed (cachegrind's I refs)."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            *args,
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: python {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def measure(tree: Path, runs: int, work: Path) -> tuple[int, int]:
    """Median instructions of ``python -c pass`` and of start → READY in ``tree``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env |= {
        "PYTHONPATH": str(tree),
        "PYTHONPYCACHEPREFIX": str(work / "pyc"),
        "WAKEFUL_SERVER__BIND": "127.0.0.1:0",
        "NO_COLOR": "1",
        # valgrind counts pymalloc's arenas as Python's own; the system allocator is steadier.
        "PYTHONMALLOC": "malloc",
    }
    child = ["-m", "bench.startup_steps", "--child"]

    def start(index: int) -> int:
        return instructions(tree, child, env | {"WAKEFUL_DAEMON__DATA_DIR": str(work / str(index))})

    start(-1)  # fills the bytecode cache, not counted
    bare = statistics.median(instructions(tree, ["-c", "pass"], env) for _ in range(runs))
    ready = statistics.median(start(i) for i in range(runs))
    return int(bare), int(ready)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per tree (default 3)")
    parser.add_argument(
        "--tree",
        type=Path,
        action="append",
        help="a checkout to measure (repeat to compare; default this one)",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    trees = [t.resolve() for t in args.tree or [REPO_ROOT]]
    rows = []
    for tree in trees:
        if not (tree / "bench" / "startup_steps.py").exists():
            raise SystemExit(f"{tree}: no bench/startup_steps.py to run")
        with tempfile.TemporaryDirectory(prefix="wakeful-instructions-") as work:
            rows.append((tree, *measure(tree, args.runs, Path(work))))
    print(f"runs: {args.runs}; instructions executed, median (millions)")
    print(f"{'tree':<40} {'python -c pass':>15} {'start → READY':>15} {'less python':>12}")
    first = rows[0][2] - rows[0][1]
    for tree, bare, ready in rows:
        own = ready - bare
        change = f" {100 * (own - first) / first:+.1f} %" if tree != rows[0][0] else ""
        figures = f"{bare / 1e6:>15.0f} {ready / 1e6:>15.0f} {own / 1e6:>12.0f}"
        print(f"{tree!s:<40} {figures}{change}")


if __name__ == "__main__":
    main()
