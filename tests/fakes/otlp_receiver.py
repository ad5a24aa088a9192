"""A small OTLP/HTTP trace receiver: what a collector does with ``POST /v1/traces``.

It decodes each request body as opentelemetry-proto's ``ExportTraceServiceRequest``
(binary protobuf, the ``http/protobuf`` protocol), keeps every span with its
resource's attributes, records the headers, and answers with an empty
``ExportTraceServiceResponse`` as the OTLP specification says a full success is.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope

from tests.fakes.loopback_http import LoopbackHttpServer, ServesWhileOpen

PROTOBUF = b"application/x-protobuf"


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str  # "": a root
    name: str
    kind: int  # opentelemetry.proto.trace.v1.Span.SpanKind
    attributes: dict[str, Any]
    links: tuple[tuple[str, str], ...]  # (trace id, span id)
    status_code: int  # 0 unset, 1 ok, 2 error
    start_ns: int
    end_ns: int
    resource: dict[str, Any] = field(default_factory=dict)


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    items: list[KeyValue] = list(pairs)
    return {kv.key: _value(kv.value) for kv in items}


class OtlpReceiver(ServesWhileOpen):
    """``POST /v1/traces`` on a loopback port; spans in ``spans``, headers in ``headers``."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.headers: list[dict[str, str]] = []
        self.content_types: list[str] = []
        self._cond = threading.Condition()
        self._http = LoopbackHttpServer(self, "otlp receiver")
        self.port = self._http.port

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._http.start()

    def close(self) -> None:
        self._http.close()

    def wait_for(self, count: int, timeout_s: float = 20.0) -> list[ReceivedSpan]:
        """At least ``count`` spans (all received so far), or TimeoutError."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.spans) >= count, timeout_s):
                raise TimeoutError(f"{len(self.spans)} spans after {timeout_s} s, not {count}")
            return list(self.spans)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            assert message["type"] == "http.request"
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        if scope["path"] != "/v1/traces" or scope["method"] != "POST":
            await _respond(send, 404, b"", b"text/plain")
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = [
            ReceivedSpan(
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id=span.parent_span_id.hex(),
                name=span.name,
                kind=span.kind,
                attributes=_attributes(span.attributes),
                links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links),
                status_code=span.status.code,
                start_ns=span.start_time_unix_nano,
                end_ns=span.end_time_unix_nano,
                resource=_attributes(resource_spans.resource.attributes),
            )
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        with self._cond:
            self.headers.append(headers)
            self.content_types.append(headers.get("content-type", ""))
            self.spans.extend(received)
            self._cond.notify_all()
        await _respond(send, 200, ExportTraceServiceResponse().SerializeToString(), PROTOBUF)


async def _respond(send: ASGISendCallable, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type), (b"content-length", b"%d" % len(body))],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
