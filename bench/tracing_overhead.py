"""What tracing costs: one span, and one event through the whole daemon.

Per span: ``with tracer.span(name, attributes)`` on the no-op tracer (the default)
and on the OpenTelemetry tracer (SDK, batch export to a live OTLP/HTTP receiver),
next to the bare baseline in the same run: the same loop with an empty ``with``.

Per event: a message that the model answers with one ``get_time`` call and then a
reply (six spans: event, invoke_agent, two chat, execute_tool, deliver), sent ``--n``
times one after the other to a real ``wakeful run``, the daemon's CPU time per event
(utime + stime of its process, all threads: the exporter's thread counts) and the
wall time per event: the default config (the no-op port), ``[telemetry]`` exporting
every trace to the receiver, and ``sample_ratio = 0`` (the SDK loaded, nothing kept).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
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


def per_event(process: DaemonProcess, model: FakeModelServer, n: int) -> tuple[float, list[float]]:
    """CPU seconds of the daemon per event, and each event's wall time."""
    assert process.proc is not None
    walls = []
    base = len(model.requests)
    process.send("warm up")
    model.wait_for_requests(base + 2, timeout_s=30)
    base += 2
    cpu = proc_cpu_seconds(process.proc.pid)
    for i in range(n):
        started = time.perf_counter()
        # Not a quick question ("what time is it?"): one the router answers in parallel
        # while the last run is still ending, which would be another path.
        process.send(f"check the clock, note {i}")
        try:
            model.wait_for_requests(base + 2 * (i + 1), timeout_s=30)
            model.wait_for_completion(base + 2 * (i + 1) - 1, timeout_s=30)
        except TimeoutError:
            last = model.requests[-1].body["messages"]
            print("stuck at event", i, [(m["role"], str(m.get("content"))[:50]) for m in last[-4:]])
            print("\n".join(process.lines[-12:]))
            raise
        walls.append(time.perf_counter() - started)
    time.sleep(0.5)  # the last reply's delivery and export: counted in the CPU
    return (proc_cpu_seconds(process.proc.pid) - cpu) / n, walls


def main() -> None:
    args = iterations_parser(__doc__ or "", 100).parse_args()
    with (
        OtlpReceiver() as receiver,
        FakeModelServer() as model,
        tempfile.TemporaryDirectory() as tmp,
    ):
        model.responder = respond
        print_table(["one span", "ns"], span_costs(args.n * 200, receiver))
        print()
        rows = []
        endpoint = f'otlp_endpoint = "{receiver.endpoint}"'
        configs = [
            ("default (no-op port)", []),
            ("[telemetry] exported", [endpoint]),
            ("[telemetry] sample_ratio = 0", [endpoint, "sample_ratio = 0"]),
        ]
        for name, telemetry in configs:
            with daemon(Path(tmp), name.split()[0].strip("[]()"), model, telemetry) as process:
                cpu, walls = per_event(process, model, args.n)
            p50, p99 = percentile(walls, 50) * 1000, percentile(walls, 99) * 1000
            rows.append([name, str(args.n), f"{cpu * 1000:.2f}", f"{p50:.2f}", f"{p99:.2f}"])
        print_table(
            [
                "one event (2 model calls, 1 tool call)",
                "n",
                "CPU ms/event",
                "wall p50 ms",
                "wall p99 ms",
            ],
            rows,
        )
        print(f"\nspans received: {len(receiver.spans)}")


if __name__ == "__main__":
    main()
