"""Email latency: APPEND on a real IMAP server → event committed → model request.

Baseline in the same run: a bare imapclient IDLE client's APPEND → EXISTS
latency against the same server. Also: the CPU the whole process spends
while the daemon holds an idle IDLE connection, next to the same window
without the daemon. The server is pymap's in-memory backend (it wakes IDLE
clients at once; its maildir backend polls the disk every second).
"""

from __future__ import annotations

import resource
import select
import tempfile
import threading
import time
from pathlib import Path

import anyio
from imapclient import IMAPClient

from bench.common import (
    LATENCY_HEADER,
    FakeModelServer,
    iterations_parser,
    ms_row,
    print_table,
    quiet_daemon_logs,
    run_like_the_daemon,
)
from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.mail_servers import PASSWORD, USER, ImapServer, make_message


def baseline(server: ImapServer, n: int) -> list[float]:
    """APPEND (from a second connection) → the IDLE client sees EXISTS."""
    client = IMAPClient("127.0.0.1", server.port, ssl=False)
    client.login(USER, PASSWORD)
    client.select_folder("INBOX", readonly=True)  # as the daemon does
    latencies = []
    for i in range(n):
        client.idle()
        started: list[float] = []

        def append(i: int = i, started: list[float] = started) -> None:
            started.append(time.monotonic())
            server.append(make_message("b@example.test", f"baseline {i}", "x"))

        thread = threading.Thread(target=append)
        thread.start()
        select.select([client.socket()], [], [], 5)  # the server speaks: new mail
        latencies.append(time.monotonic() - started[0])
        client.idle_done()
        thread.join()
    client.logout()
    return latencies


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure_daemon(server: ImapServer, model: FakeModelServer, n: int, idle_s: float):  # type: ignore[no-untyped-def]
    data = Path(tempfile.mkdtemp())
    settings = daemon_settings(data, model.base_url, email={"accounts": [server.account()]})
    commit, request = [], []
    async with harness(settings) as h, watch_feed(h) as feed:
        with anyio.fail_after(10):
            while (await h.daemon.status())["email"]["mailboxes"][0]["state"] != "idle":  # noqa: ASYNC110
                await anyio.sleep(0.02)  # the daemon's state has no event to await
        for i in range(n):
            before = len(model.requests)
            raw = make_message("c@example.test", "bench", f"daemon-body-{i}.")
            started = time.monotonic()
            await anyio.to_thread.run_sync(server.append, raw)
            await feed.wait_for(
                lambda item, i=i: item.get("type") == "event" and f"daemon-body-{i}." in str(item)
            )
            commit.append(time.monotonic() - started)
            got = await model.await_requests(before + 1)
            request.append(got[before].received_at - started)
            await anyio.sleep(0.1)  # let the agent's reply finish before the next message
        await anyio.sleep(1)
        used = cpu_s()
        await anyio.sleep(idle_s)
        idle_cpu = cpu_s() - used
    return commit, request, idle_cpu


async def main_async(n: int, idle_s: float) -> None:
    quiet_daemon_logs()
    server = ImapServer(Path("/nonexistent"), backend="dict").start()
    try:
        with FakeModelServer() as model:
            base = await anyio.to_thread.run_sync(baseline, server, n)
            used = cpu_s()
            await anyio.sleep(idle_s)
            quiet_cpu = cpu_s() - used
            commit, request, idle_cpu = await measure_daemon(server, model, n, idle_s)
    finally:
        server.stop()
    print_table(
        LATENCY_HEADER,
        [
            ms_row("baseline: bare imapclient IDLE, APPEND → EXISTS", base),
            ms_row("daemon: APPEND → email event committed", commit),
            ms_row("daemon: APPEND → model request", request),
        ],
    )
    print(f"p95 APPEND → committed: {sorted(commit)[int(0.95 * (len(commit) - 1))] * 1000:.1f} ms")
    print(
        f"CPU over {idle_s:.0f} s idle: {idle_cpu * 1000:.1f} ms with the daemon holding IDLE; "
        f"{quiet_cpu * 1000:.1f} ms for the same process before the daemon started (baseline)"
    )


def main() -> None:
    parser = iterations_parser(__doc__ or "", default_n=40)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    args = parser.parse_args()
    run_like_the_daemon(main_async, args.n, args.idle_seconds)


if __name__ == "__main__":
    main()
