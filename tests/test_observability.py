"""/metrics in Prometheus text format and /readyz, on an in-process daemon over real HTTP."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.core.components.context import ComponentHealth
from wakeful.kernel import metrics

SAMPLE = re.compile(r"^([a-z_:]+)(\{(.*)\})? (-?[0-9.e+-]+|\+Inf|NaN)$")


def parse(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample line, keyed by name and label set; fails on a malformed line."""
    samples = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [a-z_]+ .+$", line), line
            continue
        match = SAMPLE.match(line)
        assert match, f"not a Prometheus sample line: {line!r}"
        labels = frozenset(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', match.group(3) or ""))
        samples[(match.group(1), labels)] = float(match.group(4))
    return samples


def value(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def _scrape(client: httpx.AsyncClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = await client.get("/metrics", headers={"Authorization": ""})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(response.text)


@pytest.mark.anyio
async def test_metrics_count_what_happens(tmp_path: Path, model_server: FakeModelServer) -> None:
    """Accepted events, duplicates, decisions, model calls, tokens and tool calls are counted."""
    model_server.push(
        Reply(
            tool_calls=[
                ToolCallSpec("shell_exec", {"command": "echo hi"}),
                ToolCallSpec("shell_exec", {"command": ["not", "a", "string"]}),
            ]
        ),
        Reply(text="It failed.", prompt_tokens=100, completion_tokens=7, cached_tokens=60),
    )
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        before = await _scrape(h.client)
        async with watch_feed(h) as feed:
            await h.send("run it", id="evt-metrics-1")
            await h.send("run it", id="evt-metrics-1")  # a duplicate
            await feed.wait_for(lambda i: i.get("type") == "run" and i.get("state") == "idle")
        after = await _scrape(h.client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("wakeful_events_accepted_total", kind="user.input", source="user") == 1
    assert delta("wakeful_events_duplicate_total", kind="user.input") == 1
    assert delta("wakeful_route_decisions_total", kind="user.input", strategy="queue") == 1
    assert delta("wakeful_model_calls_total", outcome="ok") == 2
    assert delta("wakeful_model_tokens_total", type="cached") == 60
    assert delta("wakeful_model_call_seconds_count") == 2
    assert delta("wakeful_tool_calls_total", tool="shell_exec", outcome="done") == 1
    assert delta("wakeful_tool_calls_total", tool="shell_exec", outcome="error") == 1
    assert value(after, "wakeful_queue_depth", session="main") == 0
    assert value(after, "wakeful_tasks_running", session="main") == 0
    assert value(after, "wakeful_store_up") == 1


@pytest.mark.anyio
async def test_readyz_follows_required_components(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """/readyz is 200 until a required component or the store is down; optional ones don't count."""
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        health = h.running.registrations.health
        assert (await h.client.get("/readyz")).status_code == 200
        health["mail"] = ComponentHealth(ok=False, detail="imap down", required=False)
        assert (await h.client.get("/readyz")).status_code == 200
        health["redis"] = ComponentHealth(ok=False, detail="connection refused", required=True)
        response = await h.client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["problems"] == ["redis: connection refused"]
        del health["redis"]
        await h.daemon.store.aclose()  # the store goes away under the daemon
        response = await h.client.get("/readyz")
        assert response.status_code == 503
        # Issue 9: the problem names the store (here its file).
        store_name = f"SQLite file {tmp_path / 'wakeful.db'}"
        assert f"the event store ({store_name}) does not answer" in response.json()["problems"]
        assert value(await _scrape(h.client), "wakeful_store_up") == 0


def test_label_values_are_escaped() -> None:
    """Quotes, backslashes and newlines in label values cannot break the format."""
    counter = metrics.Counter("wakeful_test_total", "test")
    counter.inc(session='a"b\\c\nd')
    lines = list(counter.render())
    assert lines[-1] == 'wakeful_test_total{session="a\\"b\\\\c\\nd"} 1'
    parse("\n".join(lines))
