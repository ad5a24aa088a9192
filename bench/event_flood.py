"""A flood of webhooks larger than the context budget: how many events the model read.

An in-process daemon with the default configuration (SQLite store, 128k
window) and the fake model. The first webhook starts a reply that begins only
once the whole flood is posted, so every other webhook piles into the queue
(issue 21, finding 1: 400 webhooks, 90 reached a request that offered tools).
Printed per flood: events accepted, events some agent request (not a summary
request) carried, events a summary request was sent before any agent request
carried them (target 0), agent and summary requests, and the seconds from
releasing the reply until every event was carried. The baseline, in the same
run: a flood that fits in one request.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

from bench.common import print_table, quiet_daemon_logs, run_like_the_daemon, settle
from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_server import FakeModelServer
from tests.test_event_flood import HOOK, FloodModel, event_id, is_summary, post_flood, seen_by_agent

ID = re.compile(r"evt(\d{5})z")
QUIET_S = 20.0  # no new model request for this long: the daemon has stopped asking


async def flood(count: int, size: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as server:
        model = FloodModel(0.0)
        server.responder = model
        ids = {event_id(i) for i in range(count)}
        settings = daemon_settings(Path(tmp), server.base_url, hooks=[HOOK])
        async with harness(settings) as h:
            await post_flood(h, 1, size)
            await server.await_requests(1)
            await post_flood(h, count - 1, size, first=1)
            released = time.perf_counter()
            model.posted.set()
            took: float | None = None
            while ids - seen_by_agent(server):
                try:
                    await server.await_requests(len(server.requests) + 1, timeout_s=QUIET_S)
                except TimeoutError:
                    break
            else:
                took = time.perf_counter() - released
            await settle(server)
        seen = seen_by_agent(server) & ids
        first_agent: set[str] = set()
        summarised_unseen: set[str] = set()
        for record in server.requests:
            found = {m.group(0) for m in ID.finditer(str(record.body["messages"]))}
            if is_summary(record.body):
                summarised_unseen |= found - first_agent
            elif record.body.get("tools"):
                first_agent |= found
        summaries = sum(1 for r in server.requests if is_summary(r.body))
        return [
            f"{count} × {size} B",
            str(count),
            str(len(seen)),
            str(len(summarised_unseen & ids)),
            str(len(server.requests) - summaries),
            str(summaries),
            f"{took:.2f}" if took is not None else "never",
        ]


async def main(floods: list[int], size: int) -> None:
    quiet_daemon_logs()
    rows = [await flood(20, size)]  # the baseline: fits in one request
    for count in floods:
        rows.append(await flood(count, size))
    print("default configuration (128k window, reserve 8192); payload JSON per webhook")
    header = ["flood", "accepted", "seen by agent", "summarised unseen", "agent reqs"]
    print_table([*header, "summary reqs", "s to all seen"], rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--floods", type=int, nargs="+", default=[400, 2000])
    parser.add_argument("--size", type=int, default=1500, help="payload characters per webhook")
    args = parser.parse_args()
    run_like_the_daemon(main, args.floods, args.size)
