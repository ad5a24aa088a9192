"""A cross-check of the webhook load with wrk (a C load generator), when it is installed.

The Python load generator (bench/webhook_load.py) shares the machine's two
cores with the daemon; wrk costs less CPU per request, so if the two figures
agree the client is not what limits the result. Debian: ``apt-get install wrk``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

SCRIPT = Path(__file__).with_name("webhook_wrk.lua")
THREADS = 2


def available() -> bool:
    return shutil.which("wrk") is not None


def run_wrk(
    url: str, requests: Sequence[bytes], directory: Path, connections: int, seconds: float
) -> tuple[int, float, int, list[float]]:
    """(requests done, elapsed s, errors incl. non-2xx, [p50, p99, max] in ms).

    ``requests`` should outnumber what wrk sends in ``seconds``; wrk wraps around
    when they run out, which the caller sees as duplicates in the store.
    """
    path = directory / "wrk-requests.bin"
    path.write_bytes(b"\0".join(requests))
    command = [
        "wrk", f"-t{THREADS}", f"-c{connections}", f"-d{seconds:.0f}s", "-s", str(SCRIPT),
        url, "--", str(path), str(THREADS),
    ]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("WRK "))
    done, duration_us, errors, p50, p99, worst = (float(x) for x in line.split()[1:])
    return int(done), duration_us / 1e6, int(errors), [p50 / 1000, p99 / 1000, worst / 1000]
