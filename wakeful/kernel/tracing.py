"""The tracing port: what the core calls to mark the steps of one event's work.

The core (dispatcher, session loop, tool registry, outbox) names its steps here
and knows nothing of OpenTelemetry: by default :data:`NOOP` answers every call
with one shared do-nothing span, so a daemon without ``[telemetry]`` pays per
step a method call, a ``with`` and the span's name and few attributes, built
before the call (well under a microsecond next to the store write or model call
each step makes; ``bench/tracing_overhead.py`` measures it). Building them only
when a tracer is installed would put a branch at every call site for no gain
that shows.
``wakeful/telemetry/`` installs the OpenTelemetry implementation when
``[telemetry] otlp_endpoint`` is set; only then is the SDK imported.

One event is one trace even though it waits in the queue between its submit
and the run that answers it: the submit span is remembered under the event's
id (:meth:`Span.remember`), and the span the loop starts when it
takes the event continues that trace (``continues=``).

Attributes carry names, ids, counts and decisions; never message text, tool
arguments or results (a third party's words, or a secret).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Literal, Protocol

AttributeValue = str | bool | int | float | Sequence[str]
Attributes = Mapping[str, AttributeValue]
SpanKind = Literal["internal", "client", "producer", "consumer"]


class Span(Protocol):
    """One step under way."""

    def set(self, key: str, value: AttributeValue) -> None:
        """An attribute learnt during the step (the decision, the tokens used)."""
        ...

    def fail(self, reason: str) -> None:
        """The step failed; ``reason`` is the daemon's own words (a type or a state)."""
        ...

    def remember(self, key: str) -> None:
        """Keep this span's context under ``key`` (an event's id, once it is stored) for
        a later span to continue (:meth:`Tracer.span` ``continues=``)."""
        ...


class Tracer(Protocol):
    @property
    def enabled(self) -> bool:
        """False for the no-op: a caller may skip work done only for a span."""
        ...

    def span(
        self,
        name: str,
        attributes: Attributes | None = None,
        *,
        kind: SpanKind = "internal",
        continues: Sequence[str] = (),
    ) -> AbstractContextManager[Span]:
        """A span around the ``with`` block, a child of the current one.

        ``continues``: keys of remembered contexts (:meth:`Span.remember`); the last
        one found is the parent (the span joins that event's trace, whatever the
        current span is), the others are linked.
        """
        ...

    def detached(self) -> AbstractContextManager[object]:
        """No current span inside: a task started here (a session's loop, started by
        the first event to it) belongs to no event's trace of its own accord."""
        ...


class _NoopSpan:
    """One instance serves every step: entering and leaving it does nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoopSpan:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def set(self, key: str, value: AttributeValue) -> None:
        return None

    def fail(self, reason: str) -> None:
        return None

    def remember(self, key: str) -> None:
        return None


_NOOP_SPAN = _NoopSpan()


class NoopTracer:
    """The default: no span, no context, no allocation per call."""

    enabled = False

    def span(
        self,
        name: str,
        attributes: Attributes | None = None,
        *,
        kind: SpanKind = "internal",
        continues: Sequence[str] = (),
    ) -> _NoopSpan:
        return _NOOP_SPAN

    def detached(self) -> _NoopSpan:
        return _NOOP_SPAN


NOOP = NoopTracer()
_current: Tracer = NOOP


def tracer() -> Tracer:
    """The installed tracer (the no-op unless ``[telemetry]`` installed one)."""
    return _current


def install(new: Tracer) -> Tracer:
    """Make ``new`` the tracer every step uses; returns the one it replaces, for the
    daemon to put back when it stops (tests run several daemons in one process)."""
    global _current
    previous, _current = _current, new
    return previous
