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

from wakeful.sources.subscriptions.kinds.inotify import (
    DirectoryWatch,
    Inotify,
    RootGone,
    net_changes,
)

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


def inotify_descriptors() -> int:
    return sum(
        os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        for fd in os.listdir("/proc/self/fd")
        if os.path.exists(f"/proc/self/fd/{fd}")
    )


async def test_several_watches_share_one_instance_and_leave_it_one_by_one(tmp_path: Path) -> None:
    """Three subscriptions' watches (two of the same directory) in one inotify instance;
    the one disconnected stops seeing changes and takes only its own watches along."""
    logs, data = tmp_path / "logs", tmp_path / "data"
    (data / "deep").mkdir(parents=True)
    logs.mkdir()
    before = inotify_descriptors()
    shared = Inotify()
    async with (
        DirectoryWatch(logs, recursive=False, inotify=shared) as logs_a,
        DirectoryWatch(data, recursive=True, inotify=shared) as tree,
    ):
        assert inotify_descriptors() == before + 1
        async with DirectoryWatch(logs, recursive=False, inotify=shared) as logs_b:
            assert inotify_descriptors() == before + 1
            assert shared.watch_count == 3  # logs (held twice), data, data/deep
            (logs / "one.log").write_text("1")
            (data / "deep" / "x.csv").write_text("x")
            async with anyio.create_task_group() as group:
                seen: dict[str, dict[str, str]] = {}

                async def collect(name: str, watch: DirectoryWatch) -> None:
                    seen[name] = net_changes(await watch.next_batch(QUIET_MS, MAX_MS))

                for name, watch in (("a", logs_a), ("b", logs_b), ("tree", tree)):
                    group.start_soon(collect, name, watch)
            assert seen["a"] == seen["b"] == {str(logs / "one.log"): "added"}
            assert seen["tree"] == {str(data / "deep" / "x.csv"): "added"}
        # logs_b disconnected: the directory stays watched for logs_a.
        assert shared.watch_count == 3 and inotify_descriptors() == before + 1
        async with DirectoryWatch(data / "deep", recursive=False, inotify=shared):
            pass  # data/deep is data's too: its descriptor stays
        assert shared.watch_count == 3
        async with DirectoryWatch(tmp_path, recursive=False, inotify=shared):
            assert shared.watch_count == 4
        assert shared.watch_count == 3  # only its own watch went
        (logs / "two.log").write_text("2")
        batch = net_changes(await logs_a.next_batch(QUIET_MS, MAX_MS))
        assert batch == {str(logs / "two.log"): "added"}
    assert inotify_descriptors() == before and shared.watch_count == 0
