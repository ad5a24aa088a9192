"""One model call as it is recorded: the store's row, the log line."""

from __future__ import annotations

import structlog

from wakeful.core.provider import ModelResponse
from wakeful.kernel.metrics import cached_share
from wakeful.store.base import ModelCallRecord

log = structlog.get_logger(__name__)


def model_call_record(
    session: str,
    run_id: str,
    response: ModelResponse | None,
    latency_s: float,
    outcome: str,
    source: str = "",
) -> ModelCallRecord:
    usage = response.usage if response else None
    return ModelCallRecord(
        session=session,
        run_id=run_id,
        model=response.model if response else "",
        latency_s=latency_s,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        cached_tokens=usage.cached_tokens if usage else 0,
        finish_reason=response.finish_reason if response else None,
        outcome=outcome[:500],
        source=source,
    )


def log_model_call(record: ModelCallRecord) -> None:
    log.info(
        "model call",
        outcome=record.outcome,
        latency_ms=round(record.latency_s * 1000, 1),
        tokens_in=record.prompt_tokens,
        tokens_out=record.completion_tokens,
        cached_tokens=record.cached_tokens,
        cached_share=round(cached_share(record), 3),
    )
