"""Shared fixtures. Other fixture modules join through `pytest_plugins`."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.fakes.model_server import FakeModelServer
from tests.host_state import Entry, changes, shape

pytest_plugins = [
    "tests.mail_servers",
    "tests.prosody_server",
    "tests.redis_server",
    "tests.synapse_server",
]

# The machines are noisy (two cores, other suites beside ours): a property's examples are
# judged on what they assert, never on how long one took to generate or to run.
settings.register_profile("wakeful", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("wakeful")


HOST_STATE = pytest.StashKey[dict[str, Entry | None]]()

# A shell starts a background job (`(bash scripts/check.sh &)`) with SIGINT ignored, the
# tests' processes inherit that, and so would every `wakeful chat` or `wakeful onboard`
# they spawn: a Ctrl-C the tests type in cooked mode would do nothing (seen: two Ctrl-C
# tests failed in runs started that way and in no other). The commands under test get
# the SIGINT a person's terminal gives them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionstart(session: pytest.Session) -> None:
    # The one process that sees the whole run (xdist's controller, or the only one):
    # it starts before any worker and finishes after all of them.
    if "PYTEST_XDIST_WORKER" not in os.environ:
        session.stash[HOST_STATE] = shape()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run fails if a test moved, replaced, chowned or chmodded the host's wakeful
    state (tests/host_state.py): every test keeps to its own temporary root."""
    before = session.stash.get(HOST_STATE, None)
    changed = changes(before, shape()) if before is not None else []
    if changed:
        message = "the tests changed the host's wakeful state:\n" + "\n".join(changed)
        writer = session.config.get_terminal_writer()
        writer.line()
        writer.line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def codegen_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the wakeful commands the tests start keep their start-up code cache
    (wakeful/kernel/codegen_cache.py reads $CACHE_DIRECTORY, as under systemd): under
    the run's temporary root, not in the checkout's __pycache__. One per worker."""
    path = tmp_path_factory.mktemp("codegen-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CACHE_DIRECTORY", str(path))
        yield path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    """A fake model endpoint; every request any test sends it must be a valid trajectory."""
    with FakeModelServer() as server:
        yield server
    assert server.violations == [], "invalid trajectories were sent to the model"
