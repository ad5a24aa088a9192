"""Traces (issue 25): one webhook → the run that answers it → a model call with a tool
call → the reply is one trace, exported by the SDK's real OTLP/HTTP exporter to a
receiver that decodes opentelemetry-proto; no text and no secret in any span; the
default config imports and exports nothing; a collector that is down costs nothing
the daemon's user sees."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.daemon_process import DaemonProcess, free_port, run_to_exit, write_config
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.fakes.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.matrix_daemon import wait_until
from tests.otel_import_probe import PREFIX
from tests.webhook_fixtures import NEW_SECRET, dumps, sign_standard
from wakeful.kernel import tracing
from wakeful.kernel.config_base import ConfigError
from wakeful.telemetry.config import TelemetrySection

PAYLOAD_MARK = "payload-words-9f3a"  # the webhook's own text: never in a span
REPLY_TEXT = "It is half past nine, reply-words-77c1."
COLLECTOR_KEY = "collector-api-key-5b2e"  # sent as a header from headers_file
PRODUCER, CLIENT, INTERNAL = 4, 3, 1  # opentelemetry.proto Span.SpanKind


def traced_config(
    tmp_path: Path, model: FakeModelServer, port: int, telemetry: list[str] | None
) -> Path:
    """A daemon with one webhook and, unless ``telemetry`` is None, a [telemetry] table."""
    config = write_config(tmp_path / "data", model.base_url, port)
    lines = ["[[hooks]]", 'name = "deploys"', f'secret = "{NEW_SECRET}"']
    if telemetry is not None:
        lines += ["[telemetry]", *telemetry]
    with config.open("a") as file:
        file.write("\n".join(lines) + "\n")
    return config


def post_webhook(daemon: DaemonProcess, text: str) -> None:
    body = dumps({"service": text})
    headers = sign_standard(NEW_SECRET, body, "msg_trace_1")
    response = httpx.post(f"{daemon.url}/hooks/deploys", content=body, headers=headers)
    assert response.status_code == 202, response.text


def wait_for_reply(daemon: DaemonProcess, text: str, timeout_s: float = 30.0) -> None:
    """Until the outbox says ``text`` was sent (read again: nothing to await from here)."""

    def sent() -> bool:
        with daemon.client() as client:
            messages = client.get("/api/sessions/main/outbox").json()["messages"]
        return any(m["text"] == text and m["state"] == "sent" for m in messages)

    wait_until(sent, f"the reply {text!r} sent", timeout_s)


def one_tool_call_then_reply(model: FakeModelServer) -> None:
    model.push(
        Reply(tool_calls=[ToolCallSpec("get_time", {"timezone": "UTC"}, id="call_clock_1")]),
        Reply(text=REPLY_TEXT),
    )


def by_name(spans: list[ReceivedSpan], prefix: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def all_attribute_text(spans: list[ReceivedSpan]) -> str:
    return " ".join(repr(s.attributes) + repr(s.resource) for s in spans)


def test_a_webhook_is_one_trace_from_event_to_reply(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    headers_file = tmp_path / "otlp-headers"
    headers_file.write_text(f"Authorization: Bearer {COLLECTOR_KEY}\n")
    port = free_port()
    with OtlpReceiver() as receiver:
        telemetry = [
            f'otlp_endpoint = "{receiver.endpoint}"',
            f'headers_file = "{headers_file}"',
            'service_name = "wakeful-test"',
        ]
        config = traced_config(tmp_path, model_server, port, telemetry)
        one_tool_call_then_reply(model_server)
        with DaemonProcess(config, port) as daemon:
            post_webhook(daemon, f"deployed {PAYLOAD_MARK}")
            wait_for_reply(daemon, REPLY_TEXT)
            # The batch processor exports every few seconds; the stop flushes what is
            # left (the default schedule), so after it every span is at the receiver.
            assert daemon.stop() == 0
        spans = receiver.wait_for(6, timeout_s=5)
        logs = "\n".join(daemon.lines)

    (event,) = by_name(spans, "event webhook")
    (turn,) = by_name(spans, "invoke_agent")
    chats = by_name(spans, "chat ")
    (tool,) = by_name(spans, "execute_tool")
    delivers = by_name(spans, "deliver ")
    assert len(chats) == 2, [s.name for s in spans]
    assert len(delivers) == 1, [s.name for s in spans]
    (deliver,) = delivers
    # One trace: the event's submit span is the root; the run that took it from the
    # queue continues it; model calls, the tool call and the delivery are the run's.
    trace = {event.trace_id}
    assert {s.trace_id for s in (turn, *chats, tool, deliver)} == trace
    assert event.parent_span_id == ""
    assert turn.parent_span_id == event.span_id
    assert all(c.parent_span_id == turn.span_id for c in chats)
    assert tool.parent_span_id == turn.span_id
    assert deliver.parent_span_id == turn.span_id
    assert event.kind == PRODUCER and chats[0].kind == CLIENT and tool.kind == INTERNAL

    assert event.attributes["wakeful.event.kind"].startswith("webhook")
    assert event.attributes["wakeful.event.source"] == "webhook"
    assert event.attributes["wakeful.route.strategy"] == "queue"
    assert event.resource["service.name"] == "wakeful-test"
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.conversation.id"] == "main"
    # In order: the call that asked for the tool, the tool, the call that answered, the
    # delivery of its answer.
    first, second = sorted(chats, key=lambda s: s.start_ns)
    assert first.end_ns <= tool.start_ns and tool.end_ns <= second.start_ns
    assert second.end_ns <= deliver.start_ns and deliver.end_ns <= turn.end_ns
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    for chat in chats:
        assert chat.name == "chat fake-model"
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == "fake-model"
        assert chat.attributes["gen_ai.response.model"] == "fake-model"
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] >= 0
    assert tool.name == "execute_tool get_time"
    assert tool.attributes["gen_ai.tool.name"] == "get_time"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_clock_1"
    assert tool.attributes["wakeful.tool.decision"] == "allowed"
    assert tool.status_code != 2
    assert deliver.name == "deliver chat:web"  # the local chat: no other channel here
    assert deliver.attributes["wakeful.outbox.state"] == "sent"

    # No third party's words, no model text, no tool arguments, no secret.
    text = all_attribute_text(spans)
    for words in (PAYLOAD_MARK, "reply-words-77c1", "timezone", COLLECTOR_KEY, NEW_SECRET):
        assert words not in text
    # The collector got its key as a header; the daemon's log never shows it.
    assert all(h["authorization"] == f"Bearer {COLLECTOR_KEY}" for h in receiver.headers)
    assert set(receiver.content_types) == {"application/x-protobuf"}
    assert COLLECTOR_KEY not in logs


def test_the_default_config_imports_and_exports_nothing(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    with OtlpReceiver() as receiver:
        # The SDK's own variable points at a live receiver: without [telemetry] the
        # daemon still sends nothing (it never reads it: the SDK is not loaded).
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        config = traced_config(tmp_path, model_server, port, telemetry=None)
        one_tool_call_then_reply(model_server)
        with DaemonProcess(config, port, module="tests.otel_import_probe") as daemon:
            post_webhook(daemon, "deployed")
            wait_for_reply(daemon, REPLY_TEXT)
            assert daemon.stop() == 0
            with daemon._cond:  # its output is read by a thread: wait for the last line
                daemon._cond.wait_for(lambda: any(PREFIX in x for x in daemon.lines), 10)
        assert receiver.spans == [] and receiver.headers == []
    (line,) = [line for line in daemon.lines if line.startswith(PREFIX)]
    assert line == f"{PREFIX} none"


def test_importing_the_daemon_does_not_import_opentelemetry() -> None:
    code = (
        "import wakeful.app.lifespan, sys; "
        "print(any(m.startswith('opentelemetry') for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "False"


@contextmanager
def dead_collector(how: str) -> Iterator[int]:
    """A port where no collector answers: nothing listens ("refused"), or a socket
    takes the connection and never reads or answers ("hanging")."""
    if how == "refused":
        yield free_port()
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # connections complete in the backlog; nothing ever accepts them
        yield sock.getsockname()[1]


@pytest.mark.parametrize("how", ["refused", "hanging"])
def test_a_collector_that_is_down_never_blocks_or_fails_the_daemon(
    tmp_path: Path, model_server: FakeModelServer, how: str
) -> None:
    port = free_port()
    with dead_collector(how) as dead:
        # timeout_s = 1 (default 5) keeps the stop's last flush short; max_queue_size = 4
        # (default 2048): the queue is full after one event and spans are dropped.
        telemetry = [
            f'otlp_endpoint = "http://127.0.0.1:{dead}"',
            "timeout_s = 1",
            "max_queue_size = 4",
        ]
        config = traced_config(tmp_path, model_server, port, telemetry)
        one_tool_call_then_reply(model_server)
        with DaemonProcess(config, port) as daemon:
            post_webhook(daemon, "deployed")
            wait_for_reply(daemon, REPLY_TEXT)
            # Another event and its answer while the queue is full and exports hang.
            model_server.push(Reply(text="second answer"))
            daemon.send("and now?")
            wait_for_reply(daemon, "second answer")
            assert httpx.get(f"{daemon.url}/readyz", timeout=5).status_code == 200
            stopping = time.monotonic()
            assert daemon.stop(timeout_s=20) == 0
            # The last flush gives up after timeout_s; the rest of the stop is the daemon's.
            assert time.monotonic() - stopping < 8, "the stop waited on the dead collector"


def test_the_noop_tracer_is_the_default_and_costs_no_allocation() -> None:
    noop = tracing.tracer()
    assert noop is tracing.NOOP and not noop.enabled
    first = noop.span("a", {"k": 1})
    with first as span:
        span.set("k", 2)
        span.remember("event-id")
    assert noop.span("b") is first  # one shared span object for every step


def test_headers_file_errors_name_the_key_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "headers"
    bad.write_text("Authorization Bearer x\n")
    section = TelemetrySection(otlp_endpoint="http://127.0.0.1:4318", headers_file=bad)
    with pytest.raises(ConfigError, match=r"telemetry.headers_file: line 1 .* 'Name: value'"):
        section.headers()


header_names = st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,20}", fullmatch=True)
header_values = st.from_regex(r"[!-~]([ -~]{0,30}[!-~])?", fullmatch=True)


# One file under tmp_path, rewritten for each example (the fixture is not reset between
# them, which this test does not need).
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(headers=st.dictionaries(header_names, header_values, min_size=1, max_size=5))
def test_headers_file_round_trips(tmp_path: Path, headers: dict[str, Any]) -> None:
    """Whatever headers are written one 'Name: value' a line are the headers sent
    (names case-insensitive, as in HTTP)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    path = tmp_path / "headers"
    path.write_text("\n".join(f"{name}: {value}" for name, value in lowered.items()) + "\n")
    section = TelemetrySection(otlp_endpoint="http://127.0.0.1:4318", headers_file=path)
    assert section.headers() == lowered


@given(st.sampled_from(["http://c:4318", "https://c.example/otlp", "http://c:4318/v1/traces"]))
def test_spans_go_to_v1_traces_once(endpoint: str) -> None:
    url = TelemetrySection(otlp_endpoint=endpoint).traces_url()
    assert url.endswith("/v1/traces") and url.count("/v1/traces") == 1


def test_an_event_that_waited_in_the_queue_is_one_trace_with_its_answer(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A webhook that arrives while the loop answers a message waits for the next safe
    point; the run's span for its batch still continues the webhook's own trace (the
    one it was stored in, not its sender's retry that the store dropped)."""
    port = free_port()
    with OtlpReceiver() as receiver:
        config = traced_config(
            tmp_path, model_server, port, [f'otlp_endpoint = "{receiver.endpoint}"']
        )
        # The first answer streams slowly, so the webhook is queued behind it.
        model_server.push(
            Reply(text="first answer", token_delay_s=0.05), Reply(text="second answer")
        )
        with DaemonProcess(config, port) as daemon:
            daemon.send("hello")
            model_server.wait_for_requests(1)
            post_webhook(daemon, "deployed while busy")
            post_webhook(daemon, "deployed while busy")  # the sender's retry: a duplicate
            wait_for_reply(daemon, "second answer")
            assert daemon.stop() == 0
        spans = receiver.wait_for(9, timeout_s=5)
    (message,) = by_name(spans, "event user")
    webhook, repeat = by_name(spans, "event webhook")
    assert "wakeful.event.duplicate" not in webhook.attributes
    assert repeat.attributes["wakeful.event.duplicate"] is True
    turns = by_name(spans, "invoke_agent")
    assert len(turns) == 2, [s.name for s in spans]
    for event in (message, webhook):
        (turn,) = [t for t in turns if t.parent_span_id == event.span_id]
        assert turn.trace_id == event.trace_id
        (chat,) = [c for c in by_name(spans, "chat ") if c.parent_span_id == turn.span_id]
        (deliver,) = [d for d in by_name(spans, "deliver ") if d.parent_span_id == turn.span_id]
        assert chat.trace_id == deliver.trace_id == event.trace_id
    assert message.trace_id != webhook.trace_id
    # The webhook's batch was taken after the first answer was recorded.
    (late,) = [t for t in turns if t.trace_id == webhook.trace_id]
    assert late.start_ns >= min(d.end_ns for d in by_name(spans, "chat "))


def test_a_missing_sdk_is_a_config_error_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import anyio

    from wakeful.telemetry.lifecycle import tracing_installed

    # As if the otel extra were not installed: the SDK's exporter module cannot import.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    monkeypatch.delitem(sys.modules, "wakeful.telemetry.otel", raising=False)
    section = TelemetrySection(otlp_endpoint="http://127.0.0.1:4318")

    async def start() -> None:
        async with tracing_installed(section):
            pass

    with pytest.raises(
        ConfigError, match=r"telemetry.otlp_endpoint: .*pip install 'wakeful\[otel\]'"
    ):
        anyio.run(start)
    assert tracing.tracer() is tracing.NOOP


def test_the_guides_example_config_loads_as_written(tmp_path: Path) -> None:
    from tests.test_documented_commands import ROOT
    from wakeful.app.config import load_settings

    text = (ROOT / "docs" / "tracing.md").read_text()
    path = tmp_path / "wakeful.toml"
    path.write_text(text.split("```toml\n", 1)[1].split("```", 1)[0])
    telemetry = load_settings(path).telemetry
    assert telemetry.configured and telemetry.traces_url() == "http://127.0.0.1:4318/v1/traces"
    assert telemetry.sample_ratio == 0.25 and telemetry.service_name == "wakeful"


def test_the_default_config_has_no_telemetry(tmp_path: Path) -> None:
    from wakeful.app.config import load_settings

    path = tmp_path / "wakeful.toml"
    path.write_text("")
    assert not load_settings(path).telemetry.configured


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('otlp_endpoint = "127.0.0.1:4318"', "telemetry.otlp_endpoint"),
        ("sample_ratio = 1.5", "telemetry.sample_ratio"),
        ('protocol = "grpc"', "telemetry.protocol"),
    ],
)
def test_bad_telemetry_config_is_one_line_naming_the_key(
    tmp_path: Path, line: str, message: str
) -> None:
    from wakeful.app.config import load_settings

    path = tmp_path / "wakeful.toml"
    path.write_text(f"[telemetry]\n{line}\n")
    with pytest.raises(ConfigError) as raised:
        load_settings(path)
    assert message in str(raised.value) and "\n" not in str(raised.value).strip()


def test_a_missing_headers_file_stops_the_start_with_one_line(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    missing = tmp_path / "no-such-headers"
    telemetry = ['otlp_endpoint = "http://127.0.0.1:4318"', f'headers_file = "{missing}"']
    config = traced_config(tmp_path, model_server, free_port(), telemetry)
    done = run_to_exit(config)
    assert done.returncode == 2, done
    assert done.stderr.strip() == (
        f"wakeful: cannot start: telemetry.headers_file: cannot read {missing}: "
        "No such file or directory"
    )


def test_the_otel_extra_the_guide_names_installs_what_the_tracer_imports() -> None:
    """`pip install 'wakeful[otel]'` (docs/tracing.md, and the missing-SDK error) names an
    extra that holds the SDK and the OTLP/HTTP exporter; dev has them for the tests."""
    import tomllib

    from tests.test_documented_commands import ROOT

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"}
    for extra in ("otel", "dev"):
        assert names <= {spec.split(">")[0].split("=")[0] for spec in extras[extra]}, extra
    assert "pip install 'wakeful[otel]'" in (ROOT / "docs" / "tracing.md").read_text()


def test_a_failed_model_call_is_an_error_span_in_the_events_trace(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The endpoint fails once (503), the loop retries after its back-off: both calls
    are in the event's trace, the first with the error's type and not its message."""
    port = free_port()
    with OtlpReceiver() as receiver:
        config = traced_config(
            tmp_path, model_server, port, [f'otlp_endpoint = "{receiver.endpoint}"']
        )
        model_server.push(
            Reply(status=503, error_message="overloaded-words-31d0"), Reply(text="after retry")
        )
        with DaemonProcess(config, port) as daemon:
            daemon.send("hello")
            wait_for_reply(daemon, "after retry")
            assert daemon.stop() == 0
        spans = receiver.wait_for(5, timeout_s=5)
    (event,) = by_name(spans, "event user")
    (turn,) = by_name(spans, "invoke_agent")
    failed, answered = sorted(by_name(spans, "chat "), key=lambda s: s.start_ns)
    assert turn.parent_span_id == event.span_id
    assert failed.parent_span_id == answered.parent_span_id == turn.span_id
    assert failed.status_code == 2 and answered.status_code != 2
    assert failed.attributes["error.type"] == "ModelUnavailable"
    assert "gen_ai.response.model" not in failed.attributes
    assert answered.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "overloaded-words-31d0" not in all_attribute_text(spans)
