"""bench/xmpp_latency.py runs (with a small --n) and prints its figures next to the HTTP path's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def test_the_bench_runs() -> None:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [".venv/bin/python", "-m", "bench.xmpp_latency", "--n", "3"],
        cwd=root, capture_output=True, text=True, timeout=180, check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for row in ("HTTP: POST /api/messages → model request", "XMPP: model [DONE] → owner's client"):
        assert row in done.stdout, done.stdout
