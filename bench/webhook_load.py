"""The webhook benchmark's load generator, run in its own process (no shared GIL).

Each client holds one keep-alive HTTP/1.1 connection and sends pre-signed
requests back to back, reading each response before the next (like wrk's
connections); requests are built before the clock starts so signing costs
the client nothing while measuring.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

Request = bytes


def build_request(host: str, port: int, path: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def _client(
    host: str, port: int, requests: Sequence[bytes], latencies: list[float], statuses: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for request in requests:
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            statuses.append(int(head[9:12]))
    finally:
        writer.close()


async def _run(
    host: str, port: int, per_client: Sequence[Sequence[bytes]]
) -> tuple[float, list[float], list[int]]:
    latencies: list[float] = []
    statuses: list[int] = []
    started = time.perf_counter()
    await asyncio.gather(*(_client(host, port, reqs, latencies, statuses) for reqs in per_client))
    return time.perf_counter() - started, latencies, statuses


def run_load(
    host: str, port: int, per_client: Sequence[Sequence[bytes]]
) -> tuple[float, list[float], list[int]]:
    """(elapsed seconds, per-request latencies, statuses) for the given clients' requests."""
    return asyncio.run(_run(host, port, per_client))
