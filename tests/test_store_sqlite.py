"""The SQLite store only: consume stays atomic when the process is SIGKILLed.

The Store contract (idempotence, atomic consume, statuses) is tested against
every backend in test_store_contract.py.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import anyio.to_thread
import pytest

from wakeful.store.base import EventStatus
from wakeful.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parent.parent


CHILD = """
import sys
from pathlib import Path

import anyio

from wakeful.store.sqlite import SqliteStore
from wakeful.kernel.events import user_message

path, count, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


async def main() -> None:
    import random

    rng = random.Random(seed)
    store = await SqliteStore(path).open()
    for i in range(count):
        await store.append(user_message(str(i), event_id=f"ev-{i:03d}"))
    print("appended", flush=True)
    done = 0
    while True:
        pending = await store.pending("main")
        if not pending:
            break
        batch = [s.event.id for s in pending[: rng.randint(1, 4)]]
        await store.consume("main", batch, [{"role": "user", "content": i} for i in batch])
        done += len(batch)
        print(done, flush=True)
    print("finished", flush=True)


anyio.run(main)
"""


def run_child_and_kill(path: Path, count: int, seed: int, target: int) -> None:
    """Start the consuming child and SIGKILL it once it reports `target` consumed events."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(count), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "appended"
        while target:
            line = child.stdout.readline().strip()
            assert line, "child died before the kill point"
            if line == "finished" or int(line) >= target:
                break
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()


@pytest.mark.parametrize("seed", range(5))
async def test_sigkill_during_consume_never_loses_or_duplicates(tmp_path: Path, seed: int) -> None:
    """After a SIGKILL at a random point, each event is pending xor consumed-with-its-message."""
    count = 40
    path = tmp_path / "crash.sqlite"
    target = random.Random(seed).randint(0, count - 1)  # events consumed before the kill
    await anyio.to_thread.run_sync(run_child_and_kill, path, count, seed, target)

    reopened = await SqliteStore(path).open()
    try:
        events = await reopened.event_log(None, limit=1000)
        trajectory = await reopened.trajectory("main")
    finally:
        await reopened.aclose()
    assert sorted(s.event.id for s in events) == [f"ev-{i:03d}" for i in range(count)]
    contents = [m["content"] for m in trajectory]
    assert len(contents) == len(set(contents)), "a message was written twice"
    consumed = {s.event.id for s in events if s.status is EventStatus.CONSUMED}
    pending = {s.event.id for s in events if s.status is EventStatus.PENDING}
    assert consumed | pending == {s.event.id for s in events}
    assert not consumed & pending
    assert set(contents) == consumed, "consumed events and trajectory messages disagree"
    assert len(consumed) >= target
