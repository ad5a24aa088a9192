"""What tracing costs: one span, and one event through the whole daemon.

Per span: ``with tracer.span(name, attributes)`` on the no-op tracer (the default)
and on the OpenTelemetry tracer (SDK, batch export to a live OTLP/HTTP receiver),
next to the bare baseline in the same run: the same loop with an empty ``with``.

Per event: a message that the model answers with one ``get_time`` call and then a
reply (six spans: event, invoke_agent, two chat, execute_tool, deliver), sent ``--n``
times to each of three real ``wakeful run`` daemons in turn (round-robin, one event at
a time, so the shared machine's load falls on all three alike): the default config
(the no-op port), ``[telemetry]`` exporting every trace to the receiver, and
``sample_ratio = 0`` (the SDK loaded, nothing kept). Printed: each daemon's CPU time
per event (utime + stime of its process, all threads: the exporter's thread counts)
and the wall time per event.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.common import (
    FakeModelServer,
    iterations_parser,
    percentile,
    print_table,
    proc_cpu_seconds,
)
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_replies import Reply, ToolCallSpec
from tests.fakes.otlp_receiver import OtlpReceiver
from wakeful.kernel import tracing
from wakeful.telemetry.config import TelemetrySection
from wakeful.telemetry.otel import start_tracing

ATTRS = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}


class _Empty:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_EMPTY = _Empty()


def per_span_ns(make: Callable[[], AbstractContextManager[Any]], n: int) -> float:
    started = time.perf_counter_ns()
    for _ in range(n):
        with make():
            pass
    return (time.perf_counter_ns() - started) / n


def span_costs(n: int, receiver: OtlpReceiver, rounds: int = 7) -> list[list[str]]:
    """ns per span: the least of ``rounds`` interleaved rounds (the machine is shared;
    the least is the one the fewest other processes interrupted)."""
    otel = start_tracing(TelemetrySection(otlp_endpoint=receiver.endpoint))
    dropped = start_tracing(TelemetrySection(otlp_endpoint=receiver.endpoint, sample_ratio=0))
    noop = tracing.NOOP
    # Exported spans: a round stays within the queue (2048), and the export of one
    # round is flushed before the next (the exporter's thread competes for the GIL;
    # so does the receiver's, which decodes in this process).
    exported = min(n, 2000)
    variants: list[tuple[str, Callable[[], AbstractContextManager[Any]], int]] = [
        ("baseline: an empty `with`", lambda: _EMPTY, n),
        ("no-op tracer span (the default)", lambda: noop.span("c", ATTRS), n),
        ("OpenTelemetry span, sampled out", lambda: dropped.span("c", ATTRS), n),
        ("OpenTelemetry span, exported", lambda: otel.span("c", ATTRS), exported),
    ]
    best = {name: float("inf") for name, _, _ in variants}
    try:
        for _ in range(rounds):
            for name, make, count in variants:
                best[name] = min(best[name], per_span_ns(make, count))
                otel.provider.force_flush()
    finally:
        otel.provider.shutdown()
        dropped.provider.shutdown()
    return [[name, f"{ns:,.0f}"] for name, ns in best.items()]


def respond(body: dict[str, Any]) -> Reply:
    if body["messages"][-2].get("role") == "tool" or body["messages"][-1].get("role") == "tool":
        return Reply(text="It is nine.")
    return Reply(tool_calls=[ToolCallSpec("get_time", {})])


@contextmanager
def daemon(
    tmp: Path, name: str, model: FakeModelServer, telemetry: list[str]
) -> Iterator[DaemonProcess]:
    port = free_port()
    config = write_config(tmp / name, model.base_url, port)
    # Messages that follow each other closely may fall into one run: no run limit here.
    text = config.read_text().replace(
        "[loop]\n", "[loop]\nmax_model_calls_per_run = 1000000\nmax_run_seconds = 100000\n"
    )
    config.write_text(text)
    with config.open("a") as file:
        file.write("\n".join(["[telemetry]", *telemetry] if telemetry else []) + "\n")
    with DaemonProcess(config, port) as process:
        yield process
        process.stop(timeout_s=30)


class Subject:
    """One daemon under measurement, with a fake model of its own (its request count)."""

    def __init__(self, name: str, process: DaemonProcess, model: FakeModelServer) -> None:
        assert process.proc is not None
        self.name, self.process, self.model, self.pid = name, process, model, process.proc.pid
        self.events = 0
        self.cpu_s = 0.0
        self.walls: list[float] = []

    def one_event(self, text: str, measured: bool = True) -> None:
        """``text`` sent, then its two model calls answered; the wall time counted."""
        started = time.perf_counter()
        self.events += 1
        self.process.send(text)
        try:
            self.model.wait_for_requests(2 * self.events, timeout_s=30)
            self.model.wait_for_completion(2 * self.events - 1, timeout_s=30)
        except TimeoutError:
            last = self.model.requests[-1].body["messages"]
            print("stuck:", self.name, [(m["role"], str(m.get("content"))[:50]) for m in last])
            raise
        if measured:
            self.walls.append(time.perf_counter() - started)


def main() -> None:
    args = iterations_parser(__doc__ or "", 100).parse_args()
    with OtlpReceiver() as receiver, tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        print_table(["one span", "ns"], span_costs(args.n * 200, receiver))
        print()
        endpoint = f'otlp_endpoint = "{receiver.endpoint}"'
        configs = [
            ("default (no-op port)", []),
            ("[telemetry] exported", [endpoint]),
            ("[telemetry] sample_ratio = 0", [endpoint, "sample_ratio = 0"]),
        ]
        subjects = []
        for index, (name, telemetry) in enumerate(configs):
            model = stack.enter_context(FakeModelServer())
            model.responder = respond
            process = stack.enter_context(daemon(Path(tmp), f"d{index}", model, telemetry))
            subjects.append(Subject(name, process, model))
        for subject in subjects:
            subject.one_event("warm up", measured=False)
        # Round-robin, one event at a time: whatever else loads the machine loads all
        # three alike. Not a quick question ("what time is it?"), which the router may
        # answer in parallel while the last run is still ending: another path.
        # The daemons' CPU over the whole loop (each idles while the others work: alike
        # for all three), so a reply's delivery and export after its model call count.
        before = [proc_cpu_seconds(subject.pid) for subject in subjects]
        for i in range(args.n):
            for subject in subjects:
                subject.one_event(f"check the clock, note {i}")
        time.sleep(1.0)  # the last replies' delivery and export
        for subject, cpu in zip(subjects, before, strict=True):
            subject.cpu_s = proc_cpu_seconds(subject.pid) - cpu
        rows = []
        for subject in subjects:
            # Clock ticks of 10 ms over n events: a resolution of 0.1 ms per event at n=100.
            cpu_ms = subject.cpu_s / args.n * 1000
            p50, p99 = percentile(subject.walls, 50) * 1000, percentile(subject.walls, 99) * 1000
            rows.append([subject.name, str(args.n), f"{cpu_ms:.2f}", f"{p50:.2f}", f"{p99:.2f}"])
        header = ["one event (2 model calls, 1 tool call)", "n", "CPU ms/event"]
        print_table([*header, "wall p50 ms", "wall p99 ms"], rows)
        print(f"\nspans received: {len(receiver.spans)}")


if __name__ == "__main__":
    main()
