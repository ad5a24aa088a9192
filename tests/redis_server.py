"""The real Redis on loopback (started by the machine, as in CI): a key prefix per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

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
