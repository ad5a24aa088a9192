"""Tracing for the daemon's lifetime, when ``[telemetry]`` asks for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog

from wakeful.kernel import tracing
from wakeful.kernel.config_base import ConfigError
from wakeful.telemetry.config import TelemetrySection

log = structlog.get_logger(__name__)


@asynccontextmanager
async def tracing_installed(section: TelemetrySection) -> AsyncIterator[None]:
    """The OpenTelemetry tracer installed while the daemon runs; nothing (not even an
    import of the SDK) without ``otlp_endpoint``. At the end what is queued is flushed,
    for at most ``timeout_s``, in a thread: a collector that is down delays the stop by
    that much at worst."""
    if not section.configured:
        yield
        return
    try:
        from wakeful.telemetry.otel import start_tracing  # the SDK: only when configured
    except ImportError as exc:
        raise ConfigError(
            f"telemetry.otlp_endpoint: the OpenTelemetry SDK is missing ({exc.name}); "
            "install it with: pip install 'wakeful[otel]'"
        ) from None

    tracer = start_tracing(section)
    previous = tracing.install(tracer)
    log.info("tracing", endpoint=section.traces_url(), sample_ratio=section.sample_ratio)
    try:
        yield
    finally:
        tracing.install(previous)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(tracer.provider.shutdown)
