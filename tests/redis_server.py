"""The real Redis on loopback (started by the machine, as in CI): a key prefix per test."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

REDIS_URL = "redis://127.0.0.1:6379/0"


def delete_prefix(prefix: str) -> int:
    """Delete every key under ``prefix``; how many there were."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
        return len(keys)
    finally:
        client.close()


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix no other test uses; its keys are deleted afterwards."""
    prefix = f"wakeful-test:{uuid.uuid4().hex}:"
    yield prefix
    delete_prefix(prefix)


class OwnRedisServer:
    """A redis-server child of the test (not the machine's shared one), with an
    append-only file in ``data_dir``: a test may stop and start it on the same port
    and directory, as an operator restarting Redis would."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 10.0) -> OwnRedisServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--appendonly", "yes"]
        args += ["--appendfsync", "always", "--dir", str(self.data_dir), "--save", ""]
        self.proc = subprocess.Popen(
            ["redis-server", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                try:
                    client.ping()
                    return self
                except redis.ConnectionError:
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        raise
                    time.sleep(0.05)  # another process starting: nothing to await
        finally:
            client.close()

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM: Redis writes and syncs its append-only file, then exits."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=timeout_s)

    def __enter__(self) -> OwnRedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
