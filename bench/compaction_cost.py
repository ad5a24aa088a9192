"""The cost of one compaction: a 10,000-event session's first message vs a normal cycle.

An in-process daemon (SQLite store, the fake model answering at once).
``--sessions`` sessions each start with 10,000 events and their 20,000
trajectory messages (written straight into the store before the daemon starts;
see history_cost.py). The first message to each goes over the default 128k
budget, so its cycle compacts the history: measured from POST to the run being
idle, with the compaction's own time (the daemon's ``last_compaction_ms``:
choosing the boundary, the summary call, measuring the result) and the bytes
before and after — the whole stored history as JSON (what a request would carry
with no budget), the transcript the summary request carried, and the request
sent after it. The baseline, in the same run: the next messages to the same
sessions (normal cycles, no compaction), and messages to a session with no
history. The fake model answers a summary at once: a real model's summary call
adds seconds of its own, which is why compactions must stay rare.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    print_table,
    run_like_the_daemon,
    settle,
)
from bench.history_cost import HISTORY, responder, seed
from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer
from wakeful.core.context.compaction import COMPACTION_PROMPT


async def cycle(h: Harness, session: str) -> float:
    """Seconds from POST /api/messages to the run it starts being idle."""
    async with watch_feed(h, session) as feed:
        started = time.perf_counter()
        response = await h.client.post("/api/messages", json={"session": session, "text": "hi"})
        assert response.status_code == 202, response.text
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", timeout_s=120)
    return time.perf_counter() - started


async def history_bytes(h: Harness, session: str) -> int:
    answer = await h.client.get(f"/api/sessions/{session}/trajectory?full=1")
    return len(json.dumps(answer.json()["messages"], ensure_ascii=False).encode())


def is_summary(body: dict[str, Any]) -> bool:
    return bool(body["messages"][0]["content"] == COMPACTION_PROMPT)


async def main(n: int, sessions: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as model:
        data_dir = Path(tmp)
        model.responder = responder
        settings = daemon_settings(data_dir, model.base_url)
        names = [f"long-{i}" for i in range(sessions)]
        started = time.perf_counter()
        for name in names:
            await seed(data_dir, settings, name, HISTORY)
        seeded_s = time.perf_counter() - started
        compacting: list[float] = []
        compaction_ms: list[float] = []
        sizes: list[tuple[int, int, int]] = []  # history, summary request, next request
        normal: list[float] = []
        fresh: list[float] = []
        async with harness(settings) as h:
            await cycle(h, "fresh")  # warm-up: the first run of the daemon
            for name in names:
                before_bytes = await history_bytes(h, name)
                first = len(model.requests)
                compacting.append(await cycle(h, name))
                status = (await h.client.get("/api/status")).json()["sessions"][name]["context"]
                assert status["compactions"] == 1, status
                compaction_ms.append(status["last_compaction_ms"])
                sent = range(first, len(model.requests))
                summary = next(i for i in sent if is_summary(model.requests[i].body))
                after = next(i for i in sent if not is_summary(model.requests[i].body))
                sizes.append(
                    (before_bytes, len(model.raw_bodies[summary]), len(model.raw_bodies[after]))
                )
            for _ in range(n):
                for name in names:
                    normal.append(await cycle(h, name))
                fresh.append(await cycle(h, "fresh"))
        print(
            f"{sessions} sessions of {HISTORY} events / {2 * HISTORY} messages "
            f"(seeded in {seeded_s:.1f} s); default budget (128k window)"
        )
        print_table(
            LATENCY_HEADER,
            [
                ms_row("cycle with a compaction (POST → idle)", compacting),
                ms_row("  of which the compaction itself", [ms / 1000 for ms in compaction_ms]),
                ms_row("normal cycle, same sessions afterwards", normal),
                ms_row("normal cycle, session with no history", fresh),
            ],
        )
        print()
        print_table(
            ["session", "history bytes", "summary request bytes", "next request bytes", "smaller"],
            [
                [
                    name,
                    str(history),
                    str(transcript),
                    str(request),
                    f"{100 * (1 - request / history):.1f} %",
                ]
                for name, (history, transcript, request) in zip(names, sizes, strict=True)
            ],
        )
        await settle(model)


if __name__ == "__main__":
    parser = iterations_parser(__doc__ or "", 20)
    parser.add_argument("--sessions", type=int, default=2, help="10,000-event sessions")
    args = parser.parse_args()
    run_like_the_daemon(main, args.n, args.sessions)
