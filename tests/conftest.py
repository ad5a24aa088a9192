"""Shared fixtures. Other fixture modules join through `pytest_plugins`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.model_server import FakeModelServer

pytest_plugins = ["tests.mail_servers", "tests.redis_server", "tests.synapse_server"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    """A fake model endpoint; every request any test sends it must be a valid trajectory."""
    with FakeModelServer() as server:
        yield server
    assert server.violations == [], "invalid trajectories were sent to the model"
