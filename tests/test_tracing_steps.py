"""Each traced step's span, with the SDK's in-memory exporter: every decision of a
tool call through the real registry and safety policy chain, and what a failed step
records (its type, never its message)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.test_handlers_registry import _FakeTool
from tests.test_handlers_tools import make_ctx
from wakeful.app.config import StoreSection
from wakeful.core.tool_registry import ToolRegistry
from wakeful.kernel import tracing
from wakeful.safety.assembly import build_safety
from wakeful.safety.config import SafetySection
from wakeful.store.factory import open_store
from wakeful.telemetry.otel import OtelTracer
from wakeful.tools.registry import default_registry

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = tracing.install(OtelTracer(provider))
    try:
        yield exporter
    finally:
        tracing.install(previous)
        provider.shutdown()


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = exporter.get_finished_spans()
    exporter.clear()
    return span


async def test_each_tool_decision_is_on_its_span(
    tmp_path: Path, exported: InMemorySpanExporter
) -> None:
    ctx = make_ctx(tmp_path)
    store = await open_store(StoreSection(), tmp_path / "data")
    try:
        registry = default_registry()
        registry.guard_with(build_safety(SafetySection(), store, data_dir=tmp_path).chain)
        cases = [
            ("get_time", '{"timezone": "UTC"}', "allowed", None),
            ("read_file", '{"path": "/etc/secret-file-5e1"}', "refused", "refused"),
            ("get_time", '{"timezone": 5}', "invalid_arguments", "invalid_arguments"),
            ("no_such_tool", "{}", "unknown_tool", "unknown_tool"),
        ]
        for name, arguments, decision, error in cases:
            output = await registry.execute(name, arguments, ctx)
            span = only_span(exported)
            assert span.name == f"execute_tool {name}"
            assert span.attributes is not None
            assert span.attributes["gen_ai.tool.name"] == name
            assert span.attributes["gen_ai.tool.call.id"] == ctx.call_id
            assert span.attributes["wakeful.tool.decision"] == decision, output.text
            assert span.attributes.get("error.type") == error
            assert span.status.status_code == (StatusCode.ERROR if error else StatusCode.UNSET)
            assert "secret-file-5e1" not in repr(dict(span.attributes))
    finally:
        await store.aclose()


async def test_a_tool_that_fails_or_times_out_records_its_kind_not_its_message(
    tmp_path: Path, exported: InMemorySpanExporter
) -> None:
    ctx = make_ctx(tmp_path)
    registry = ToolRegistry(default_timeout_s=0.1)
    registry.register(_FakeTool("broken", error=RuntimeError("a third party said: hunter2")))
    registry.register(_FakeTool("slow", sleep_s=5))
    await registry.execute("broken", "{}", ctx)
    broken = only_span(exported)
    await registry.execute("slow", "{}", ctx)
    slow = only_span(exported)
    assert broken.attributes is not None and slow.attributes is not None
    assert broken.attributes["error.type"] == "tool_error"
    assert slow.attributes["error.type"] == "timeout"
    assert "hunter2" not in repr(broken.to_json())


async def test_an_exception_through_a_span_records_its_type_only(
    exported: InMemorySpanExporter,
) -> None:
    with pytest.raises(ValueError), tracing.tracer().span("step"):
        raise ValueError("the words of an e-mail, hunter2")
    span = only_span(exported)
    assert span.attributes is not None and span.attributes["error.type"] == "ValueError"
    assert span.status.status_code == StatusCode.ERROR
    assert "hunter2" not in span.to_json()


async def test_a_continued_span_joins_the_remembered_trace_and_links_the_rest(
    exported: InMemorySpanExporter,
) -> None:
    tracer = tracing.tracer()
    with tracer.span("event a") as a_span:
        a_span.remember("a")
    with tracer.span("event b") as b_span:
        b_span.remember("b")
    with tracer.span("a repeat of b"):
        pass  # not remembered: the store dropped it
    with tracer.span("outer"), tracer.span("run", continues=["a", "unknown", "b"]):
        await anyio.lowlevel.checkpoint()
    spans = {s.name: s for s in exported.get_finished_spans()}
    run, a, b = spans["run"], spans["event a"], spans["event b"]
    assert run.parent is not None and b.context is not None and a.context is not None
    # The newest remembered event is the parent (not the current span), the others links.
    assert run.parent.span_id == b.context.span_id
    assert run.context is not None and run.context.trace_id == b.context.trace_id
    assert [link.context.span_id for link in run.links] == [a.context.span_id]
