"""SIGKILL between `sending` and `sent`: the message is `unknown`, visible, never resent.

A child process claims a message and blocks inside the channel's deliver (a
deterministic window); it is killed there. The next deliverer — in-process
on both backends, and a real `wakeful run` on the same data_dir — marks it
unknown, shows it as unread, and does not hand it to a channel again.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.redis_server import REDIS_URL
from tests.test_outbox_contract import Recording
from wakeful.core.outbox.deliverer import Deliverer
from wakeful.core.outbox.factory import open_outbox
from wakeful.store.base import Store
from wakeful.store.outbox.states import DeliveryState
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore


def kill_while_blocked_in_deliver(backend: str, where: str) -> int:
    """Run the blocking child, SIGKILL it inside deliver; the message id it held."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.outbox_blocking_child", backend, where],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        # Each readline blocks until the child writes; log lines come first.
        line = next((ln for ln in child.stdout if ln.startswith("blocked ")), "")
        assert line, "the child exited before its channel held the message"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    return int(line.split()[1])


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_killed_mid_send_is_unknown_and_not_resent(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = str(tmp_path / "wakeful.db")
    if backend == "redis":
        where = request.getfixturevalue("redis_prefix")
    message_id = kill_while_blocked_in_deliver(backend, where)
    store: Store = (
        await SqliteStore(Path(where)).open()
        if backend == "sqlite"
        else await RedisStore(REDIS_URL, prefix=where).open()
    )
    try:
        outbox = await open_outbox(store)
        held = await outbox.get(message_id)
        assert held is not None and held.state is DeliveryState.SENDING  # the evidence
        channel = Recording()
        async with anyio.create_task_group() as group:
            await group.start(Deliverer(outbox, [channel]).run)
            group.cancel_scope.cancel()
        after = await outbox.get(message_id)
        assert after is not None and after.state is DeliveryState.UNKNOWN
        assert after.attempts == 1 and "may or may not have arrived" in after.last_error
        assert channel.delivered == []  # not resent
        assert [m.id for m in await outbox.unread("main")] == [message_id]  # visible
    finally:
        await store.aclose()


def test_daemon_restart_shows_the_interrupted_message_as_unknown(tmp_path: Path) -> None:
    """A real daemon started on the data_dir reports it unread and unknown over HTTP."""
    message_id = kill_while_blocked_in_deliver("sqlite", str(tmp_path / "wakeful.db"))
    port = free_port()
    with DaemonProcess(write_config(tmp_path, None, port), port) as daemon:
        with daemon.client() as client:
            unread = client.get("/api/sessions/main/outbox", params={"unread": 1}).json()
        assert daemon.stop() == 0
    [message] = unread["messages"]
    assert (message["id"], message["state"], message["text"]) == (
        message_id,
        "unknown",
        "the build is green",
    )
    assert message["attempts"] == 1
