"""The inotify watch behind connect_channel(kind="file"): real files, a real kernel queue.

What the subscription tests (tests/test_subscriptions.py) do not reach: a tree
that grows under a recursive watch, an editor's save by rename, a burst made
and undone, the root going away, and that a waiting watch holds no thread and
leaves no descriptor behind when cancelled.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import anyio
import pytest

from wakeful.channels.subscriptions.kinds.inotify import DirectoryWatch, RootGone, net_changes

pytestmark = pytest.mark.anyio

QUIET_MS, MAX_MS = 100, 2000


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_directory_made_after_the_watch_began_is_watched_too(tmp_path: Path) -> None:
    async with DirectoryWatch(tmp_path, recursive=True) as watch:
        (tmp_path / "a" / "b").mkdir(parents=True)
        (tmp_path / "a" / "b" / "early.txt").write_text("made with the tree")
        batch = net_changes(await watch.next_batch(QUIET_MS, MAX_MS))
        assert batch[str(tmp_path / "a" / "b" / "early.txt")] == "added"
        assert batch[str(tmp_path / "a")] == "added"
        (tmp_path / "a" / "b" / "later.txt").write_text("made once b was watched")
        batch = net_changes(await watch.next_batch(QUIET_MS, MAX_MS))
        assert batch == {str(tmp_path / "a" / "b" / "later.txt"): "added"}


async def test_each_path_once_with_what_the_burst_did_to_it(tmp_path: Path) -> None:
    kept, saved = tmp_path / "kept.txt", tmp_path / "saved.txt"
    kept.write_text("old")
    saved.write_text("old")
    async with DirectoryWatch(tmp_path, recursive=False) as watch:
        (tmp_path / "new.txt").write_text("1")
        (tmp_path / "new.txt").write_text("2")  # added then modified: added
        (tmp_path / "swap.tmp").write_text("x")
        (tmp_path / "swap.tmp").unlink()  # made and removed again: nothing
        kept.write_text("new")
        (tmp_path / "saved.txt.new").write_text("new")
        os.replace(tmp_path / "saved.txt.new", saved)  # an editor's save by rename
        batch = net_changes(await watch.next_batch(QUIET_MS, MAX_MS))
    # saved.txt.new was made and renamed away (nothing); saved.txt was replaced.
    assert batch == {str(tmp_path / "new.txt"): "added", str(kept): "modified", str(saved): "added"}


async def test_the_root_going_away_ends_the_watch(tmp_path: Path) -> None:
    root = tmp_path / "watched"
    root.mkdir()
    async with DirectoryWatch(root, recursive=True) as watch:
        shutil.rmtree(root)
        with pytest.raises(RootGone), anyio.fail_after(5):
            while True:
                await watch.next_batch(QUIET_MS, MAX_MS)


async def test_a_waiting_watch_holds_no_thread_and_closes_when_cancelled(tmp_path: Path) -> None:
    descriptors, threads = open_descriptors(), threading.active_count()
    waiting = anyio.Event()
    async with anyio.create_task_group() as group:

        async def watch_forever() -> None:
            async with DirectoryWatch(tmp_path, recursive=True) as watch:
                waiting.set()
                await watch.next_batch(QUIET_MS, MAX_MS)

        group.start_soon(watch_forever)
        await waiting.wait()
        await anyio.wait_all_tasks_blocked()
        assert threading.active_count() == threads
        assert open_descriptors() == descriptors + 1
        group.cancel_scope.cancel()
    assert open_descriptors() == descriptors


async def test_a_burst_longer_than_the_window_is_cut_at_it(tmp_path: Path) -> None:
    async with DirectoryWatch(tmp_path, recursive=False) as watch:
        async with anyio.create_task_group() as group:

            async def keep_writing() -> None:
                for n in range(40):
                    (tmp_path / f"f{n}").write_text("x")
                    await anyio.sleep(0.02)

            group.start_soon(keep_writing)
            first = net_changes(await watch.next_batch(QUIET_MS, 200))
            assert 0 < len(first) < 40  # one stream of changes is not held back to its end
        seen = set(first)
        while len(seen) < 40:  # and nothing is lost between batches
            seen |= set(net_changes(await watch.next_batch(QUIET_MS, MAX_MS)))
        assert seen == {str(tmp_path / f"f{n}") for n in range(40)}
