"""SIGTERM: refuse new events, reach a safe point within the bound, exit 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.model_server import FakeModelServer
from tests.graceful_stop import EXIT_MARGIN_S, STOP_TIMEOUT_S, StopOutcome, run_stop_cycle


@pytest.fixture(autouse=True)
def _short_stop_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAKEFUL_DAEMON__STOP_TIMEOUT_S", str(STOP_TIMEOUT_S))


def _check_common(outcome: StopOutcome) -> None:
    assert outcome.exit_code == 0, "\n".join(outcome.log_tail)
    assert outcome.stop_s < STOP_TIMEOUT_S + EXIT_MARGIN_S
    if outcome.refused is not None:  # a quick stop may be over before we post
        assert outcome.refused.status_code == 503
        assert int(outcome.refused.headers["retry-after"]) > 0
    # Nothing was lost: the queued message (and any accepted late one) waits for the restart.
    waiting = {i: s for i, s in outcome.statuses.items() if s != "consumed"}
    assert waiting and set(waiting.values()) == {"pending"}
    assert sum(s == "consumed" for s in outcome.statuses.values()) == 1


def test_sigterm_during_stream(tmp_path: Path, model_server: FakeModelServer) -> None:
    """A stream that will not finish in time is dropped whole; the queued event stays."""
    outcome = run_stop_cycle(tmp_path, model_server, "stream")
    _check_common(outcome)
    assert [m["role"] for m in outcome.messages] == ["user"]
    assert outcome.stop_s >= STOP_TIMEOUT_S  # it waited for a safe point first
    assert outcome.refused is not None  # and refused new events meanwhile


def test_sigterm_during_tool(tmp_path: Path, model_server: FakeModelServer) -> None:
    """A running tool is cancelled with an honest placeholder; its process group dies."""
    outcome = run_stop_cycle(tmp_path, model_server, "tool")
    _check_common(outcome)
    assert [m["role"] for m in outcome.messages] == ["user", "assistant", "tool"]
    placeholder = outcome.messages[2]["content"]
    assert "because the daemon was stopping" in placeholder
    assert "may have partially executed" in placeholder


def test_sigterm_waits_for_a_short_stream(tmp_path: Path, model_server: FakeModelServer) -> None:
    """A reply that completes within the bound is recorded whole before the exit."""
    outcome = run_stop_cycle(tmp_path, model_server, "short-stream")
    _check_common(outcome)
    assert [m["role"] for m in outcome.messages] == ["user", "assistant"]
    assert outcome.messages[1]["content"].split() == ["whole"] * 10


@pytest.mark.slow
@pytest.mark.parametrize("cycle", range(50))
def test_sigterm_cycles(tmp_path: Path, model_server: FakeModelServer, cycle: int) -> None:
    """50 SIGTERM cycles alternating between a streaming reply and a running tool."""
    during = "stream" if cycle % 2 else "tool"
    _check_common(run_stop_cycle(tmp_path / str(cycle), model_server, during))
