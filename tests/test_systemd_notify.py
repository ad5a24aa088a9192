"""sd_notify and the watchdog, with the test playing systemd."""

from __future__ import annotations

import itertools
import os
import socket
import tempfile
import threading
from pathlib import Path

import httpx
import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.systemd_fake import Notification, NotifySocket
from wakeful.app.systemd import Notifier, watchdog_interval

PING_USEC = 300_000  # systemd would ping-expect every 0.3 s; we ping every 0.15 s


def test_notifier_is_silent_without_socket() -> None:
    """With no NOTIFY_SOCKET every call is a no-op that reports nothing was sent."""
    notifier = Notifier.from_env({})
    assert not notifier.enabled
    assert notifier.send(READY="1") is False


def test_notifier_sends_to_a_path_socket() -> None:
    """A filesystem socket path gets one KEY=value datagram per call."""
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        path = os.path.join(tmp, "notify")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
            receiver.bind(path)
            notifier = Notifier.from_env({"NOTIFY_SOCKET": path})
            notifier.stopping("bye", extend_s=7.5)
            notifier.close()
            data = receiver.recv(4096).decode()
    assert data.splitlines() == ["STOPPING=1", "STATUS=bye", "EXTEND_TIMEOUT_USEC=7500000"]


def test_watchdog_interval_rules() -> None:
    """Half of WATCHDOG_USEC, and none when WATCHDOG_PID names another process."""
    assert watchdog_interval({"WATCHDOG_USEC": "2000000"}) == 1.0
    assert watchdog_interval({}) is None
    assert watchdog_interval({"WATCHDOG_USEC": "0"}) is None
    mine = {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}
    assert watchdog_interval(mine) == 1.0
    assert watchdog_interval({**mine, "WATCHDOG_PID": "1"}) is None


def _gaps(notes: list[Notification]) -> list[float]:
    return [b.at - a.at for a, b in itertools.pairwise(notes)]


def test_ready_watchdog_stopping_and_blocked_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """READY comes after the listener is bound, pings are periodic, stop when the loop
    is blocked and resume after it, and SIGTERM sends STOPPING then exits 0."""
    port = free_port()
    connected_at_ready: list[bool] = []

    def on_message(note: Notification) -> None:
        if "READY" in note.fields:  # systemd would start dependents now: can they connect?
            with socket.socket() as probe:
                connected_at_ready.append(probe.connect_ex(("127.0.0.1", port)) == 0)

    with NotifySocket(on_message) as notify:
        monkeypatch.setenv("NOTIFY_SOCKET", notify.address)
        monkeypatch.setenv("WATCHDOG_USEC", str(PING_USEC))
        monkeypatch.setenv("WAKEFUL_TEST_BLOCK_LOOP_ROUTE", "1")
        with DaemonProcess(write_config(tmp_path, None, port), port) as daemon:
            ready = notify.wait_for("READY")
            assert connected_at_ready == [True]
            assert ready.fields["STATUS"].startswith("ready: http://127.0.0.1:")
            before = len(notify.with_key("WATCHDOG"))
            notify.wait_for("WATCHDOG", count=before + 5)
            assert all(0.05 < gap < 0.3 for gap in _gaps(notify.with_key("WATCHDOG")[-5:]))

            blocker = threading.Thread(target=_block_loop, args=(daemon.url, 1.2))
            blocker.start()
            blocker.join(timeout=10)
            pings = notify.with_key("WATCHDOG")
            notify.wait_for("WATCHDOG", count=len(pings) + 2)
            assert max(_gaps(notify.with_key("WATCHDOG"))) > 1.0  # the blocked stretch

            assert daemon.stop() == 0
    stopping = notify.wait_for("STOPPING", timeout_s=1)
    assert int(stopping.fields["EXTEND_TIMEOUT_USEC"]) > 0
    assert stopping.at > ready.at


def _block_loop(url: str, seconds: float) -> None:
    response = httpx.post(f"{url}/debug/block-loop", params={"seconds": seconds}, timeout=10)
    assert response.status_code == 200


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
