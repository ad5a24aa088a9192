"""The core tier's one fixture: log lines rendered cheaply."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def plain_tracebacks() -> Iterator[None]:
    """structlog's default renderer draws a crash's traceback with rich (~0.7 s each,
    and a supervised crash logs one): plain text here, the default restored after."""
    saved = structlog.get_config()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.dev.ConsoleRenderer(
                colors=False, exception_formatter=structlog.dev.plain_traceback
            ),
        ]
    )
    yield
    structlog.configure(**saved)
