"""What memory costs: the tokens it adds to the fixed part of every request (the three
tools named in the system prompt, and the digest of MEMORY.md at its default bound),
and memory_search's latency over 10,000 memory entries and 10,000 stored messages.

Baselines in the same run: the fixed part of the same daemon with ``[memory] enabled =
false``; for the search, the FTS5 query alone on the same index (what is left once
nothing changed is reading the stores) and reading every session's stored history.
With ``[memory] embeddings_model`` the same search ranks by meaning too: its rows
(vectors from the fake model server over loopback HTTP) sit beside the words-only ones.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import (
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    print_table,
    run_like_the_daemon,
    timed,
)
from tests.daemon_harness import daemon_settings, running_daemon
from wakeful.app.config import StoreSection
from wakeful.memory.files import MEMORY_FILE, MemoryFiles, day_file, entry_line
from wakeful.memory.search import MemorySearch
from wakeful.store.base import Store
from wakeful.store.factory import open_store

ENTRIES = 10_000
MESSAGES = 10_000
SESSIONS = 10
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
WORDS += ["golf", "hotel", "india", "juliet", "kilo", "lima"]


async def fixed_part(root: Path, memory: dict[str, Any], digest: str | None) -> int:
    """Characters of system prompt + tools in the main session's next request."""
    if digest is not None:
        await anyio.Path(root).mkdir(parents=True, exist_ok=True)
        await anyio.Path(root / MEMORY_FILE).write_text(digest)
    settings = daemon_settings(root, "http://127.0.0.1:9", memory=memory)
    async with running_daemon(settings) as running:
        request = await running.daemon.dispatcher.sessions.get("main").next_request()
    return len(request.messages[0]["content"]) + len(json.dumps(request.tools))


def sentence(n: int) -> str:
    return " ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 9)) + f" item{n}"


def write_entries(root: Path) -> None:
    from datetime import date, timedelta

    files = MemoryFiles(root)
    lines: dict[str, list[str]] = {}
    for n in range(ENTRIES):
        name = MEMORY_FILE if n % 10 == 0 else day_file(date(2026, 1, 1) + timedelta(n % 300))
        lines.setdefault(name, []).append(entry_line(sentence(n), f"mem-{n:08x}"))
    for name, chunk in lines.items():
        files.append(name, "".join(chunk))


async def search_rows(n: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = await open_store(StoreSection(), root)
        try:
            for s in range(SESSIONS):
                batch = [
                    {"role": "user" if m % 2 == 0 else "assistant", "content": sentence(m + s)}
                    for m in range(MESSAGES // SESSIONS)
                ]
                await store.append_messages(f"s{s}", batch)
            write_entries(root / "mem")
            search = MemorySearch(store, MemoryFiles(root / "mem"), root / "index.sqlite")
            started = time.perf_counter()
            await search.search("golf item77")
            first = time.perf_counter() - started
            steady = await timed(n, lambda: search.search("golf hotel item4242"))
            fts_only = await timed(n, lambda: anyio.to_thread.run_sync(
                search.index.search, "golf hotel item4242", 8))  # fmt: skip

            async def read_all() -> None:
                for s in range(SESSIONS):
                    await store.trajectory(f"s{s}")

            reads = await timed(n, read_all)

            async def after_one_message() -> None:
                await store.append_messages("s0", [{"role": "user", "content": "one more"}])
                await search.search("golf hotel item4242")

            grown = await timed(n, after_one_message)
            print(f"passages indexed: {search.index.count()}")
            search.close()
            hybrid_first, hybrid = await hybrid_rows(n, store, root)
        finally:
            await store.aclose()
    return [
        ms_row("FTS5 query alone (baseline)", fts_only),
        ms_row(f"reading {SESSIONS} sessions' {MESSAGES} messages (baseline)", reads),
        ms_row("memory_search, first (builds the index)", [first]),
        ms_row("memory_search, nothing new", steady),
        ms_row("memory_search, one new message", grown),
        ms_row(f"by meaning too: first (embeds {PER_SEARCH} passages)", [hybrid_first]),
        ms_row(f"by meaning too, nothing new ({DIMS}-dim vectors)", hybrid),
    ]


PER_SEARCH = 20_000  # every passage at once: the steady state is what is measured
DIMS = 1536  # OpenAI's text-embedding-3-small


async def hybrid_rows(n: int, store: Store, root: Path) -> tuple[float, list[float]]:
    """The same index with [memory] embeddings_model: vectors from the fake model
    server's /embeddings over loopback HTTP (one round trip per search for the
    question), the ranking by cosine over every passage, fused with BM25's."""
    from tests.fakes.model_server import FakeModelServer
    from wakeful.memory.embeddings import Embedder, Meaning

    with FakeModelServer() as server:
        server.embedding_dims = DIMS
        embedder = Embedder(server.base_url, "fake-embed", None, 600.0)
        meaning = Meaning(embedder, per_search=PER_SEARCH)
        search = MemorySearch(store, MemoryFiles(root / "mem"), root / "index.sqlite", meaning)
        try:
            started = time.perf_counter()
            await search.search("golf item77")
            first = time.perf_counter() - started
            steady = await timed(n, lambda: search.search("golf hotel item4242"))
        finally:
            search.close()
            await embedder.aclose()
    return first, steady


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        off = await fixed_part(root / "off", {"enabled": False}, None)
        empty = await fixed_part(root / "empty", {}, None)
        digest = "".join(f"- {sentence(k)} <!-- mem-{k:08x} -->\n" for k in range(200))
        full = await fixed_part(root / "full", {}, digest)
    print_table(
        ["fixed part (system prompt + tools)", "chars", "≈ tokens (chars / 4)", "added"],
        [
            ["[memory] enabled = false (baseline)", str(off), str(off // 4), "-"],
            ["memory on, MEMORY.md empty", str(empty), str(empty // 4), str((empty - off) // 4)],
            [
                "memory on, digest at its 2000-char bound",
                str(full),
                str(full // 4),
                str((full - off) // 4),
            ],
        ],
    )
    print()
    print_table(LATENCY_HEADER, await search_rows(n))


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 30).parse_args()
    run_like_the_daemon(main, args.n)
