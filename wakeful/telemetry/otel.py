"""The OpenTelemetry tracer behind :mod:`wakeful.kernel.tracing`'s port.

Imported only when ``[telemetry] otlp_endpoint`` is set (``wakeful/app/lifespan.py``),
so a daemon without it never loads the SDK. Spans are exported by a batch processor
in its own thread with a bounded queue: a collector that is slow or down costs
dropped spans and a warning in the log, never a blocked or failed event.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Link, SpanContext, Status, StatusCode

from wakeful.kernel.logging import add_secrets
from wakeful.kernel.tracing import Attributes, AttributeValue, SpanKind
from wakeful.telemetry.config import TelemetrySection

# Contexts kept for the loop to continue an event's trace: the newest this many. An
# event that waits longer than that many newer ones starts a new trace when it is taken.
REMEMBERED = 10_000

_KINDS = {
    "internal": trace.SpanKind.INTERNAL,
    "client": trace.SpanKind.CLIENT,
    "producer": trace.SpanKind.PRODUCER,
    "consumer": trace.SpanKind.CONSUMER,
}


class OtelSpan:
    __slots__ = ("_span", "_tracer")

    def __init__(self, span: trace.Span, tracer: OtelTracer) -> None:
        self._span = span
        self._tracer = tracer

    def set(self, key: str, value: AttributeValue) -> None:
        self._span.set_attribute(key, value)

    def fail(self, reason: str) -> None:
        self._span.set_attribute("error.type", reason)
        self._span.set_status(Status(StatusCode.ERROR))

    def remember(self, key: str) -> None:
        self._tracer.keep(key, self._span.get_span_context())


class OtelTracer:
    """Spans of one SDK ``TracerProvider``; the daemon owns it and shuts it down."""

    enabled = True

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("wakeful")
        self._contexts: OrderedDict[str, SpanContext] = OrderedDict()

    def remembered(self, key: str) -> SpanContext | None:
        return self._contexts.get(key)

    def keep(self, key: str, context: SpanContext) -> None:
        self._contexts[key] = context
        self._contexts.move_to_end(key)
        while len(self._contexts) > REMEMBERED:
            self._contexts.popitem(last=False)

    def detached(self) -> AbstractContextManager[None]:
        return _detached()

    @contextmanager
    def span(
        self,
        name: str,
        attributes: Attributes | None = None,
        *,
        kind: SpanKind = "internal",
        continues: Sequence[str] = (),
    ) -> Iterator[OtelSpan]:
        parent = None
        links: list[Link] = []
        if continues:
            found = [c for c in map(self._contexts.get, continues) if c is not None]
            if found:
                parent = trace.set_span_in_context(trace.NonRecordingSpan(found[-1]))
                links = [Link(c) for c in found[:-1]]
        span = self._tracer.start_span(
            name, context=parent, kind=_KINDS[kind], attributes=attributes, links=links
        )
        # The exception's message is not recorded: it may quote a third party's words.
        # Its type is, by fail() below.
        with trace.use_span(
            span, end_on_exit=True, record_exception=False, set_status_on_exception=False
        ) as current:
            wrapped = OtelSpan(current, self)
            try:
                yield wrapped
            except BaseException as exc:
                wrapped.fail(type(exc).__name__)
                raise


@contextmanager
def _detached() -> Iterator[None]:
    token = otel_context.attach(otel_context.Context())
    try:
        yield
    finally:
        otel_context.detach(token)


def start_tracing(section: TelemetrySection) -> OtelTracer:
    """A tracer exporting to ``section``'s collector (ConfigError on a bad headers file)."""
    headers = section.headers()
    add_secrets(list(headers.values()))
    exporter = OTLPSpanExporter(
        endpoint=section.traces_url(), headers=headers, timeout=section.timeout_s
    )
    provider = TracerProvider(
        resource=Resource.create({"service.name": section.service_name}),
        # An event's spans follow its root's choice: a trace is kept or dropped whole.
        sampler=ParentBased(TraceIdRatioBased(section.sample_ratio)),
    )
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=section.max_queue_size,
            max_export_batch_size=min(512, section.max_queue_size),
            export_timeout_millis=int(section.timeout_s * 1000),
        )
    )
    return OtelTracer(provider)
