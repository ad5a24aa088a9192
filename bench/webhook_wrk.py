"""A cross-check of the webhook load with wrk (a C load generator), when it is installed.

The Python load generator (bench/webhook_load.py) shares the machine's two
cores with the daemon; wrk costs less CPU per request, so if the two figures
agree the client is not what limits the result. Debian: ``apt-get install wrk``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).with_name("webhook_wrk.lua")
THREADS = 2


def available() -> bool:
    return shutil.which("wrk") is not None


@dataclass(frozen=True)
class WrkRun:
    """What one wrk run did, and the server's CPU seconds over it (when asked)."""

    done: int  # requests completed
    elapsed_s: float
    errors: int  # including non-2xx answers
    ms: list[float]  # p50, p99, max
    cpu_s: float | None

    @property
    def rate(self) -> float:
        return self.done / self.elapsed_s

    @property
    def cpu_us(self) -> float | None:
        """The server's CPU µs per completed request."""
        return None if self.cpu_s is None else self.cpu_s / max(self.done, 1) * 1e6


def run_wrk(
    url: str,
    requests: Sequence[bytes],
    directory: Path,
    connections: int,
    seconds: float,
    cpu: Callable[[], float] | None = None,
) -> WrkRun:
    """wrk's run; ``cpu`` (the server's CPU seconds so far) is read around wrk alone.

    ``requests`` should outnumber what wrk sends in ``seconds``; wrk wraps around
    when they run out, which the caller sees as duplicates in the store.
    """
    path = directory / "wrk-requests.bin"
    path.write_bytes(b"\0".join(requests))
    command = [
        "wrk", f"-t{THREADS}", f"-c{connections}", f"-d{seconds:.0f}s", "-s", str(SCRIPT),
        url, "--", str(path), str(THREADS),
    ]  # fmt: skip
    cpu_before = cpu() if cpu else 0.0
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    cpu_s = cpu() - cpu_before if cpu else None
    line = next(line for line in out.splitlines() if line.startswith("WRK "))
    done, duration_us, errors, p50, p99, worst = (float(x) for x in line.split()[1:])
    ms = [p50 / 1000, p99 / 1000, worst / 1000]
    return WrkRun(int(done), duration_us / 1e6, int(errors), ms, cpu_s)
