"""The file tools' cost, through the real registry, next to the plain operation.

* grep: a regular expression over a generated tree (2,000 files of 200 lines,
  ~20 MB, one match per file) with ``limit`` 100, next to ``grep -rnE | head
  -100`` run as a process over the same tree (both stop early); and a pattern
  that matches nothing (the whole tree read), next to ``grep -rn``.
* read_file: a 4 MB text file the agent wrote (read whole, hashed, looked up in
  the ledger) and the same bytes written by someone else (no ledger hit), next
  to Python reading and splitting the same file.
* write_file: 1 MB (temporary file, fsync, rename, directory fsync, ledger
  record), next to a plain open/write/fsync of the same bytes.

The ledger is a real SQLite store (``synchronous=FULL``) in the same directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, print_table
from tests.test_file_tools import context
from wakeful.store.sqlite import SqliteStore
from wakeful.tools.registry import default_registry


async def timed(n: int, action: Callable[[], Awaitable[object]]) -> list[float]:
    await action()  # warm-up, unmeasured
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - started)
    return samples


def make_tree(root: Path) -> None:
    filler = "".join(f"    value_{i} = compute({i}, other)  # some text\n" for i in range(199))
    for d in range(40):
        directory = root / "tree" / f"pkg{d}"
        directory.mkdir(parents=True)
        for f in range(50):
            (directory / f"mod{f}.py").write_text(f"def needle_{d}_{f}():\n{filler}")


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch) / "data"
        ctx = context(data_dir)
        make_tree(ctx.workspace)
        store = await SqliteStore(data_dir / "wakeful.db").open()
        try:
            tools = default_registry(state=store)
            rows = []

            async def grep_tool() -> None:
                out = await tools.execute(
                    "grep", json.dumps({"pattern": r"def needle_\d+", "path": "tree"}), ctx
                )
                assert out.text.count("\n") == 100, out.text[-300:]

            async def grep_process() -> None:
                await asyncio.to_thread(
                    subprocess.run,
                    "grep -rnE 'def needle_[0-9]+' tree | head -100",
                    shell=True,
                    cwd=ctx.workspace,
                    check=True,
                    capture_output=True,
                )

            async def grep_tool_all() -> None:
                out = await tools.execute(
                    "grep", json.dumps({"pattern": "nowhere_to_be_found", "path": "tree"}), ctx
                )
                assert "no matches" in out.text and "2000 files" in out.text, out.text

            async def grep_process_all() -> None:
                await asyncio.to_thread(
                    subprocess.run,
                    ["grep", "-rn", "nowhere_to_be_found", "tree"],
                    cwd=ctx.workspace,
                    capture_output=True,
                )

            rows.append(ms_row("grep tool, 100 of 2000 matches", await timed(n, grep_tool)))
            rows.append(ms_row("baseline: grep -rnE | head -100", await timed(n, grep_process)))
            rows.append(ms_row("grep tool, no match, 20 MB", await timed(n, grep_tool_all)))
            rows.append(ms_row("baseline: grep -rn, no match", await timed(n, grep_process_all)))

            big = "".join(f"line {i} of a long log with some words in it\n" for i in range(90_000))
            await tools.execute("write_file", json.dumps({"path": "own.txt", "content": big}), ctx)
            (ctx.workspace / "foreign.txt").write_text(big)

            def reader(name: str) -> Callable[[], Awaitable[object]]:
                async def read() -> None:
                    out = await tools.execute("read_file", json.dumps({"path": name}), ctx)
                    assert not out.is_error and (out.untrusted_source is None) == (
                        name == "own.txt"
                    )

                return read

            async def plain_read() -> None:
                await asyncio.to_thread(
                    lambda: (ctx.workspace / "foreign.txt").read_text().splitlines()[:200]
                )

            size = len(big.encode()) / 1e6
            rows.append(ms_row(f"read_file own {size:.1f} MB", await timed(n, reader("own.txt"))))
            rows.append(
                ms_row(f"read_file foreign {size:.1f} MB", await timed(n, reader("foreign.txt")))
            )
            rows.append(ms_row("baseline: read + splitlines", await timed(n, plain_read)))

            payload = "x" * 79 + "\n"
            content = payload * (1_000_000 // len(payload))

            async def write_tool() -> None:
                out = await tools.execute(
                    "write_file", json.dumps({"path": "w.txt", "content": content}), ctx
                )
                assert not out.is_error, out.text

            def plain_write_sync() -> None:
                with open(ctx.workspace / "plain.txt", "w") as f:
                    f.write(content)
                    f.flush()
                    os.fsync(f.fileno())

            async def plain_write() -> None:
                await asyncio.to_thread(plain_write_sync)

            rows.append(ms_row("write_file 1 MB", await timed(n, write_tool)))
            rows.append(ms_row("baseline: open/write/fsync", await timed(n, plain_write)))
        finally:
            await store.aclose()
    print_table(LATENCY_HEADER, rows)


if __name__ == "__main__":
    args = iterations_parser(__doc__.splitlines()[0], default_n=20).parse_args()
    asyncio.run(main(args.n))
