"""Logging: JSON lines, bound context, level filter, redaction of secrets."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog

from wakeful.kernel.logging import (
    PER_EVENT_BURST,
    REDACTED,
    LineRateLimit,
    Redactor,
    add_secrets,
    capped_logger,
    configure_logging,
)

SECRET = "tok-0123456789abcdef"


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", json=True, secrets=[SECRET], stream=stream)
    yield stream
    structlog.reset_defaults()
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == "wakeful"]:
        root.removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_every_line_is_json_with_context(out: io.StringIO) -> None:
    """structlog and stdlib records both come out as JSON with bound context."""
    log = structlog.get_logger()
    with structlog.contextvars.bound_contextvars(event_id="e1", session="main", run_id="r1"):
        log.info("started", n=1)
        logging.getLogger("uvicorn.error").warning("server %s", "up")
    records = lines(out)
    assert [r["event"] for r in records] == ["started", "server up"]
    for record in records:
        assert record["event_id"] == "e1" and record["session"] == "main"
        assert record["run_id"] == "r1"
        assert "timestamp" in record and "level" in record


def test_level_filter(out: io.StringIO) -> None:
    """Records below the configured level are dropped, from both worlds."""
    structlog.get_logger().debug("hidden")
    logging.getLogger("somelib").debug("hidden too")
    logging.getLogger("uvicorn.access").info("GET / 200")
    structlog.get_logger().warning("shown")
    assert [r["event"] for r in lines(out)] == ["shown"]


def test_known_secret_never_appears(out: io.StringIO) -> None:
    """A configured secret is replaced wherever it occurs, tracebacks included."""
    log = structlog.get_logger()
    log.info(f"token is {SECRET}", nested={"list": [f"x{SECRET}y"]}, other=SECRET)
    logging.getLogger("uvicorn.error").error("GET /stream?t=%s", SECRET)
    try:
        raise RuntimeError(f"bad {SECRET}")
    except RuntimeError:
        log.exception("failed")
    text = out.getvalue()
    assert SECRET not in text
    assert text.count(REDACTED) >= 5
    assert len(lines(out)) == 3


def test_secrets_added_later_are_redacted(out: io.StringIO) -> None:
    """add_secrets extends redaction to values learned after start."""
    later = "late-secret-value-42"
    add_secrets([later])
    structlog.get_logger().info("x", value=later)
    assert later not in out.getvalue()


def test_sensitive_keys_are_redacted_but_counts_kept() -> None:
    """Keys named like credentials are hidden; numeric counts stay readable."""
    redactor = Redactor()
    result = redactor(
        None,
        "info",
        {
            "event": "call",
            "api_key": "abc",
            "headers": {"Authorization": "Bearer xyz"},
            "password": "hunter2",
            "prompt_tokens": 12,
            "url": "/api/sessions/main/stream?token=zzz",
        },
    )
    assert result["api_key"] == REDACTED
    assert result["headers"] == {"Authorization": REDACTED}
    assert result["password"] == REDACTED
    assert result["prompt_tokens"] == 12
    assert result["url"] == f"/api/sessions/main/stream?token={REDACTED}"


def test_unknown_level_is_refused() -> None:
    """A misspelt level fails loudly instead of logging everything."""
    with pytest.raises(ValueError, match="log level"):
        configure_logging("verbose", json=True, stream=io.StringIO())


def test_timestamps_are_iso_utc_with_microseconds(out: io.StringIO) -> None:
    """The cached-second timestamper writes what TimeStamper(fmt="iso", utc=True) would."""
    before = datetime.now(UTC) - timedelta(milliseconds=1)  # stamps truncate, now() rounds
    structlog.get_logger().info("first")
    logging.getLogger("somelib").warning("second")  # the stdlib path shares the processor
    after = datetime.now(UTC)
    stamps = [str(record["timestamp"]) for record in lines(out)]
    assert len(stamps) == 2
    for stamp in stamps:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", stamp), stamp
        assert before <= datetime.fromisoformat(stamp.replace("Z", "+00:00")) <= after


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_per_event_lines_are_capped_and_the_gap_is_counted() -> None:
    """A burst passes, then `rate` a second; the next written line says how many were left out."""
    clock = FakeClock()
    limit = LineRateLimit(["event routed"], rate=2.0, burst=3, clock=clock)

    def written(n: int) -> list[int]:
        taken = [limit.take("event routed") for _ in range(n)]
        return [gap for gap in taken if gap is not None]

    assert written(10) == [0, 0, 0]  # the burst; 7 left out
    assert not limit.capped("other line")  # not listed: never capped
    clock.now += 1.0  # two more lines' worth
    assert written(5) == [7, 0]
    clock.now += 60  # refills to the burst, never beyond
    assert written(4) == [3, 0, 0]


def test_a_written_line_after_a_gap_carries_the_count() -> None:
    """Through a capped logger: lines over the cap never reach a processor, and the first
    line after the cap lifts says how many were left out (`similar_suppressed`)."""
    clock = FakeClock()
    limit = LineRateLimit(["event routed"], rate=2.0, burst=3, clock=clock)
    seen: list[dict[str, object]] = []

    def keep(logger: object, method: str, event_dict: Any) -> Any:
        seen.append(dict(event_dict))
        raise structlog.DropEvent

    structlog.configure(
        processors=[keep],
        wrapper_class=capped_logger(structlog.make_filtering_bound_logger(logging.INFO), limit),
    )
    try:
        log = structlog.get_logger()
        for i in range(10):
            log.info("event routed", n=i)
        log.warning("unrelated")
        clock.now += 0.5  # one line's worth
        log.info("event routed", n="after")
        log.debug("event routed")  # below the level: neither written nor counted
    finally:
        structlog.reset_defaults()
    assert [r.get("n") for r in seen] == [0, 1, 2, None, "after"]
    assert seen[-1]["similar_suppressed"] == 7
    assert all("similar_suppressed" not in r for r in seen[:-1])


def test_the_cap_applies_above_debug_only() -> None:
    """At info a flood of one per-event line is capped; at debug every line is written."""
    for level in ("info", "debug"):
        stream = io.StringIO()
        configure_logging(level, json=True, stream=stream)
        try:
            log = structlog.get_logger()
            for i in range(500):
                log.info("event routed", n=i)
            log.info("unrelated")
        finally:
            structlog.reset_defaults()
        records = lines(stream)
        routed = [r for r in records if r["event"] == "event routed"]
        if level == "info":  # the burst, plus what refilled at 20/s while the loop ran
            assert PER_EVENT_BURST <= len(routed) <= PER_EVENT_BURST + 2
        else:
            assert len(routed) == 500
        assert records[-1]["event"] == "unrelated"
