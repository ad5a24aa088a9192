"""A cycle's cost against the size of the session's history: 0 vs 10,000 events.

An in-process daemon (SQLite store, the fake model answering at once). Three
sessions in the same run: ``fresh`` with no history, ``long`` whose store
already holds 10,000 events and their 20,000 trajectory messages, and
``longer`` with 20,000 events (written straight into the store before the
daemon starts). A long session's request is held to the context budget (its
first message compacts it to ~60 % of the window), so ``long`` costs more than
``fresh`` for the size of its request, but ``longer`` must cost what ``long``
does: the cost follows the budget, not the history. After one warm-up message
each (for ``long`` that is where its first compaction happens: its cost is
printed on its own), measured per message: **ingest** (POST /api/messages to
202) and **event → request** (POST to the fake model receiving the request the
event caused). Target: longer/long ~1.

Then a profile of one cycle's request, per session: building it (status bar,
context budget, tools), the provider's conversion to its wire body (OpenAI's,
and Anthropic's for the same request), and encoding it — with the encoded
prefix kept (what the providers do, one new status bar each time) against the
whole body encoded every time (what they did before), in the same run.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    percentile,
    print_table,
    run_like_the_daemon,
    settle,
)
from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_replies import text_reply
from tests.fakes.model_server import FakeModelServer
from wakeful.core.context.compaction import COMPACTION_PROMPT
from wakeful.core.provider import WireBody
from wakeful.kernel.events import user_message
from wakeful.llm.request_encoding import SessionEncoders, dumps
from wakeful.store.base import EventStatus
from wakeful.store.factory import open_store

HISTORY = 10_000


async def seed(data_dir: Path, settings: Any, session: str, events: int) -> None:
    store = await open_store(settings.store, data_dir)
    try:
        for n in range(events):
            event = user_message(f"history message {n}: " + "lorem ipsum " * 12, session=session)
            await store.append(event, EventStatus.CONSUMED, "queue", "history")
        messages: list[dict[str, Any]] = []
        for n in range(events):
            messages.append({"role": "user", "content": f"history message {n}: " + "lorem " * 20})
            messages.append({"role": "assistant", "content": f"answer {n}: " + "ipsum " * 20})
        await store.append_messages(session, messages)
    finally:
        await store.aclose()


def responder(body: dict[str, Any]) -> Any:
    if body["messages"][0]["content"] == COMPACTION_PROMPT:
        return text_reply("Summary: the user sent many history messages; all were answered.")
    return text_reply("ok")


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as model:
        data_dir = Path(tmp)
        model.responder = responder
        settings = daemon_settings(data_dir, model.base_url)
        started = time.perf_counter()
        await seed(data_dir, settings, "long", HISTORY)
        await seed(data_dir, settings, "longer", 2 * HISTORY)
        seeded_s = time.perf_counter() - started
        rows: list[list[str]] = []
        async with harness(settings) as h:
            warm: dict[str, float] = {}
            results: dict[str, tuple[list[float], list[float]]] = {}
            for session in ("fresh", "long", "longer"):
                t0 = time.perf_counter()
                await one(h, model, session)
                warm[session] = time.perf_counter() - t0
                ingest, to_request = [], []
                for _ in range(n):
                    a, b = await one(h, model, session)
                    ingest.append(a)
                    to_request.append(b)
                results[session] = (ingest, to_request)
            status = (await h.client.get("/api/status")).json()["sessions"]["long"]["context"]
            profile_rows = [row for s in ("fresh", "long") for row in await profile(h, s, n)]
        for session, (ingest, to_request) in results.items():
            rows.append(ms_row(f"{session}: ingest (POST → 202)", ingest))
            rows.append(ms_row(f"{session}: event → model request", to_request))
        print(
            f"history: {HISTORY} events / {2 * HISTORY} messages in session long "
            f"(seeded in {seeded_s:.1f} s)"
        )
        print_table(LATENCY_HEADER, rows)
        for name in ("long", "longer"):
            ratio = percentile(results[name][1], 50) / percentile(results["fresh"][1], 50)
            print(f"event → request, {name}/fresh at p50: {ratio:.2f}x")
        doubled = percentile(results["longer"][1], 50) / percentile(results["long"][1], 50)
        print(f"event → request, 20,000 vs 10,000 events at p50: {doubled:.2f}x (flat: ~1)")
        print(
            f"first message of each (warm-up; long includes its first compaction): "
            f"fresh {warm['fresh'] * 1000:.0f} ms, long {warm['long'] * 1000:.0f} ms"
        )
        print(f"long's context afterwards: {status}")
        print()
        print(
            "one cycle's request, built and encoded (the same request each time, a new status bar):"
        )
        print_table(LATENCY_HEADER, profile_rows)
        await settle(model)


async def profile(h: Any, session: str, n: int) -> list[list[str]]:
    """Rows: build, wire conversion and encoding of ``session``'s next request."""
    # Imported here: the anthropic SDK is not loaded while the latencies above are measured.
    from wakeful.llm.anthropic_provider import AnthropicProvider

    loop = h.daemon.sessions.get(session)
    openai_provider = loop.deps.provider
    assert isinstance(openai_provider, WireBody)
    anthropic_provider = AnthropicProvider(api_key="unused", model="claude-bench")
    providers: dict[str, WireBody] = {"openai": openai_provider, "anthropic": anthropic_provider}
    encoders = {name: SessionEncoders() for name in providers}  # not the daemon's own
    times: dict[str, list[float]] = {}

    def clock(name: str, started: float) -> float:
        now = time.perf_counter()
        times.setdefault(name, []).append(now - started)
        return now

    for iteration in range(n + 1):
        started = time.perf_counter()
        request = await loop.next_request()
        after = clock("build request (status bar, context fit, tools)", started)
        messages = len(request.messages)
        for name, provider in providers.items():
            body = provider.wire_body(request)
            after = clock(f"{name} wire body (conversion)", after)
            encoders[name].encode(session, body)
            after = clock(f"{name} encode, prefix kept", after)
            dumps(body)
            # Restarted: the next provider's conversion must not include this encode.
            after = clock(f"{name} encode, whole body (before)", after)
        if iteration == 0:  # the first fills the kept prefix: not a cycle
            times.clear()
    await anthropic_provider.aclose()
    return [ms_row(f"{session} ({messages} msgs): {name}", t) for name, t in times.items()]


async def one(h: Any, model: FakeModelServer, session: str) -> tuple[float, float]:
    """Send one message; (ingest s, event → request s); returns once the run is idle."""
    async with watch_feed(h, session) as feed:
        before = len(model.requests)
        t0 = time.perf_counter()
        mono0 = time.monotonic()
        response = await h.client.post("/api/messages", json={"session": session, "text": "hi"})
        ingest = time.perf_counter() - t0
        assert response.status_code == 202, response.text
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", timeout_s=60)
    mains = [
        r for r in model.requests[before:] if r.body["messages"][0]["content"] != COMPACTION_PROMPT
    ]
    return ingest, mains[0].received_at - mono0 if mains else float("nan")


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 50).parse_args()
    run_like_the_daemon(main, args.n)
