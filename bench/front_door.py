"""The front door under clients without a token (issue 22, finding 3).

A real `wakeful run` with a GitHub-signed hook at the shipped cap (500):

1. signed deliveries, a new connection each (as GitHub sends them), with no
   idle connections, then with ``--idle`` idle TCP connections open from the
   same address, then with as many re-opened as fast as the daemon closes them
   (by another process, so it competes for the cores but not the GIL):
   share of 2xx and latency (target: ≥ 99 % 2xx with 1,200 idle);
2. six request-head floods (``--flood-mib`` each): the daemon's peak RSS
   (target: < 200 MB) and how much each flood sent before the daemon closed it;
3. the head limit's cost: keep-alive requests to one small app through
   ``GuardedHttpTools``, uvicorn's plain ``HttpToolsProtocol`` and its
   ``H11Protocol`` (the pure-Python parser whose own limit works), interleaved
   in the same process.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import resource
import socket
import tempfile
import threading
import time
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from bench.common import LATENCY_HEADER, ms_row, percentile, print_table, proc_rss_mib
from tests.daemon_process import DaemonProcess, free_port
from tests.idle_sockets import closed_by_server, github_hook_config, idle_connection
from tests.webhook_fixtures import dumps, sign_github
from wakeful.app.http.connections import MAX_HEAD_BYTES, guarded_protocol
from wakeful.app.http.serve import QuietServer, bind_socket


def _deliveries(url: str, n: int) -> tuple[float, list[float]]:
    """Share of 2xx and the latency of each delivery (fresh connection each)."""
    ok = 0
    seconds = []
    with httpx.Client(base_url=url, timeout=10) as client:
        for _ in range(n):
            body = dumps({"zen": "bench", "hook_id": 1})
            headers = {**sign_github(body, "ping"), "Connection": "close"}
            started = time.perf_counter()
            try:
                status = client.post("/hooks/gh", content=body, headers=headers).status_code
            except httpx.TransportError:
                status = 0
            seconds.append(time.perf_counter() - started)
            ok += 200 <= status < 300
    return ok / n, seconds


def _reopener(port: int, idle: int, ready: EventType, stop: EventType) -> None:
    """In a process of its own (so it takes no GIL from the client): hold ``idle``
    connections open, re-opening each one the daemon closes, until ``stop``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, idle + 256)), hard))
    pool = [idle_connection(port) for _ in range(idle)]
    ready.set()
    while not stop.is_set():
        for i, sock in enumerate(pool):
            if closed_by_server(sock):
                sock.close()
                pool[i] = idle_connection(port)
        time.sleep(0.01)  # a scan of the pool every 10 ms: an eager attacker


def _flood(port: int, limit: int, sent: list[int]) -> None:
    total = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            while total < limit:
                sock.sendall(b"X-A: b\r\n" * 8192)
                total += 8 * 8192
        except OSError:
            pass
    sent.append(total)


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def daemon_part(n: int, idle: int, flood_mib: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * idle + 1024)), hard))
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        with DaemonProcess(github_hook_config(Path(tmp), port), port) as proc:
            assert proc.proc is not None
            pid = proc.proc.pid
            _deliveries(proc.url, 10)  # warm-up
            rows = []
            share, none = _deliveries(proc.url, n)
            rows.append(("no idle connections", share, none))
            pool = [idle_connection(port) for _ in range(idle)]
            share, held = _deliveries(proc.url, n)
            rows.append((f"{idle} idle connections", share, held))
            for sock in pool:
                sock.close()
            ready, stop = multiprocessing.Event(), multiprocessing.Event()
            reopener = multiprocessing.Process(target=_reopener, args=(port, idle, ready, stop))
            reopener.start()
            try:
                ready.wait(30)
                share, churn = _deliveries(proc.url, n)
            finally:
                stop.set()
                reopener.join()
            rows.append((f"{idle} idle, re-opened when closed", share, churn))
            print(f"signed deliveries (POST /hooks/gh, new connection each), n={n}")
            print_table(
                [LATENCY_HEADER[0], "2xx", *LATENCY_HEADER[1:]],
                [[name, f"{share * 100:.1f} %", *ms_row(name, s)[1:]] for name, share, s in rows],
            )
            before = proc_rss_mib(pid)
            sent: list[int] = []
            floods = [
                threading.Thread(target=_flood, args=(port, flood_mib * 1024 * 1024, sent))
                for _ in range(6)
            ]
            for thread in floods:
                thread.start()
            for thread in floods:
                thread.join()
            print()
            print(f"6 request-head floods of up to {flood_mib} MiB each")
            print_table(
                ["measure", "value"],
                [
                    ["RSS before (MiB)", f"{before:.0f}"],
                    ["peak RSS after, VmHWM (MiB)", f"{_peak_rss_mib(pid):.0f}"],
                    ["largest flood sent before the close (MiB)", f"{max(sent) / 2**20:.1f}"],
                    [
                        "/healthz after",
                        str(httpx.get(proc.url + "/healthz", timeout=10).status_code),
                    ],
                ],
            )
            proc.stop()


async def _pong(request: Request) -> Response:
    return Response(b"pong")


def _keep_alive_requests(port: int, n: int) -> list[float]:
    request = f"GET /p HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: bench\r\n\r\n".encode()
    seconds = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(n):
            started = time.perf_counter()
            sock.sendall(request)
            data = b""
            while not data.endswith(b"pong"):
                data += sock.recv(4096)
            seconds.append(time.perf_counter() - started)
    return seconds


async def _head_limit_cost(n: int) -> None:
    app = Starlette(routes=[Route("/p", _pong)])
    protocols: dict[str, type[asyncio.Protocol]] = {
        "GuardedHttpTools (head limit, admission)": guarded_protocol(500),
        "uvicorn HttpToolsProtocol (no limit)": HttpToolsProtocol,
        "uvicorn H11Protocol (h11's own 16 KiB limit)": H11Protocol,
    }
    samples: dict[str, list[float]] = {name: [] for name in protocols}
    async with anyio.create_task_group() as group:
        servers = []
        ports = {}
        for name, protocol in protocols.items():
            sock = bind_socket("127.0.0.1", 0)
            ports[name] = sock.getsockname()[1]
            config = uvicorn.Config(
                app,
                http=protocol,
                log_config=None,
                access_log=False,
                lifespan="off",
                h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            )
            server = QuietServer(config)
            servers.append(server)
            group.start_soon(server.serve, [sock])
        # A poll: uvicorn's `started` is a bare flag, no event to wait on.
        while not all(server.started for server in servers):  # noqa: ASYNC110
            await anyio.sleep(0.01)
        for _ in range(5):  # interleaved rounds, so drift hits both alike
            for name in protocols:
                samples[name] += await anyio.to_thread.run_sync(
                    _keep_alive_requests, ports[name], n // 5
                )
        for server in servers:
            server.request_exit()
    print()
    print(f"head limit cost: keep-alive GET to a one-route app, n={n} each, same process")
    print_table(
        ["measure", "n", "p50 µs", "p99 µs"], [_us_row(name, s) for name, s in samples.items()]
    )


def _us_row(name: str, seconds: list[float]) -> list[str]:
    us = [s * 1e6 for s in seconds]
    return [name, str(len(us)), f"{percentile(us, 50):.1f}", f"{percentile(us, 99):.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200, help="deliveries per row")
    parser.add_argument("--idle", type=int, default=1200, help="idle connections")
    parser.add_argument("--flood-mib", type=int, default=32, help="bytes per head flood")
    parser.add_argument("--cost-n", type=int, default=20000, help="requests per protocol")
    args = parser.parse_args()
    daemon_part(args.n, args.idle, args.flood_mib)
    anyio.run(_head_limit_cost, args.cost_n)


if __name__ == "__main__":
    main()
