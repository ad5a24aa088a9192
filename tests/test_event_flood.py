"""A flood of events larger than the context budget: the model reads every one.

Webhooks posted while a reply streams pile into one queue bigger than the
budget. The promise (issue 21, finding 1): an event is never placed behind a
compaction boundary before an agent request (one that offers tools, not a
summary request) carried it verbatim. Each webhook carries a unique id in its
payload; the fake model server records every request in order, so the test
checks, per id, that an agent request carried it, and did so before any
summary request (the only way past a boundary) was sent it.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply, text_reply
from tests.webhook_fixtures import NEW_SECRET, dumps, sign_standard
from wakeful.core.context.compaction import COMPACTION_PROMPT

# No template: the payload itself is the text (a template cuts values at 300 chars).
HOOK = {"name": "flood", "secret": NEW_SECRET}
ID = re.compile(r"evt(\d{5})z")
# Each wait for the model's next request; past it the queue is stuck (the bug).
NEXT_REQUEST_S = 20.0


def event_id(i: int) -> str:
    return f"evt{i:05d}z"


def is_summary(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == COMPACTION_PROMPT


class FloodModel:
    """The fake model's script: the first reply starts only once the whole flood is
    posted (``posted``; so it piles up whatever the machine's speed) and streams
    slowly; later ones stream at ``token_delay_s`` a token."""

    def __init__(self, token_delay_s: float) -> None:
        self.token_delay_s = token_delay_s
        self.posted = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if is_summary(body):
            return text_reply("A flood of deployment webhooks was acknowledged.")
        if not self.posted.is_set():  # the server's own thread waits, not the daemon
            self.posted.wait(timeout=60)
            return Reply(text=" ".join(["working"] * 20), token_delay_s=0.02)
        return Reply(text="Noted those deployments.", token_delay_s=self.token_delay_s)


async def post_flood(h: Harness, count: int, size: int, first: int = 0) -> None:
    """``count`` signed webhooks, each about ``size`` chars, 16 at a time."""
    limit = anyio.Semaphore(16)

    async def post(i: int) -> None:
        async with limit:
            body = dumps({"service": event_id(i) + " " + "x" * size})
            headers = sign_standard(NEW_SECRET, body, f"msg_{i}")
            response = await h.client.post("/hooks/flood", content=body, headers=headers)
            assert response.status_code == 202, response.text

    async with anyio.create_task_group() as group:
        for i in range(first, first + count):
            group.start_soon(post, i)


async def until_all_seen(server: FakeModelServer, ids: set[str]) -> None:
    """Wait, request by request, until agent requests carried all ``ids``; fails
    naming how many no agent request carried when the model is asked nothing more."""
    while True:
        missing = ids - seen_by_agent(server)
        if not missing:
            return
        try:
            await server.await_requests(len(server.requests) + 1, timeout_s=NEXT_REQUEST_S)
        except TimeoutError:
            pytest.fail(f"{len(missing)} of {len(ids)} events reached no agent request")


def seen_by_agent(server: FakeModelServer) -> set[str]:
    return {
        m.group(0)
        for r in list(server.requests)
        if not is_summary(r.body) and r.body.get("tools")
        for m in ID.finditer(str(r.body["messages"]))
    }


def check_never_compacted_unseen(server: FakeModelServer, ids: set[str]) -> None:
    """Every id was in an agent request before any summary request was sent it."""
    first_agent: dict[str, int] = {}
    for record in list(server.requests):
        found = {m.group(0) for m in ID.finditer(str(record.body["messages"]))}
        if is_summary(record.body):
            unseen = sorted(found - first_agent.keys())
            assert not unseen, f"request {record.index} summarised unseen events {unseen[:5]}"
        elif record.body.get("tools"):
            for event in found:
                first_agent.setdefault(event, record.index)
    assert ids <= first_agent.keys()
    assert server.too_long == []


async def flood(
    server: FakeModelServer,
    data: Path,
    count: int,
    size: int,
    window: int | None,
    token_delay_s: float = 0.0,
) -> None:
    """The first webhook starts a slow reply; the rest are posted while it streams."""
    context = {} if window is None else {"max_tokens": window}
    server.context_window = window
    model = FloodModel(token_delay_s)
    server.responder = model
    async with harness(daemon_settings(data, server.base_url, hooks=[HOOK], context=context)) as h:
        await post_flood(h, 1, size)
        await server.await_requests(1)
        await post_flood(h, count - 1, size, first=1)
        model.posted.set()
        await until_all_seen(server, {event_id(i) for i in range(count)})


@pytest.mark.anyio
async def test_400_webhooks_during_a_slow_reply_all_reach_the_model(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Default configuration: 400 webhooks of ~1.5 kB (more than the budget together)
    posted while the first reply streams; the model reads all 400, oldest first."""
    await flood(model_server, tmp_path, 400, 1500, window=None)
    ids = {event_id(i) for i in range(400)}
    check_never_compacted_unseen(model_server, ids)
    batches = [
        r.body["messages"]
        for r in model_server.requests
        if "Unprocessed event 1/" in str(r.body["messages"])
    ]
    # Presented over several cycles, each saying how many were waiting then.
    assert len(batches) >= 2
    assert "did not fit in this request and follow after your response" in str(batches[0])


PROPERTY_EXAMPLES = int(os.environ.get("WAKEFUL_PROPERTY_EXAMPLES", "6"))


def flood_property(test: Callable[..., None]) -> Callable[..., None]:
    """Each example boots a daemon: few examples, no deadline, no health checks."""
    test = settings(
        max_examples=PROPERTY_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck)
    )(test)
    marked: Callable[..., None] = pytest.mark.filterwarnings("ignore::ResourceWarning")(test)
    return marked


@flood_property
@given(
    count=st.integers(min_value=2, max_value=160),
    size=st.integers(min_value=10, max_value=4000),
    window=st.sampled_from([24_000, 32_000, 64_000]),
    token_delay_s=st.sampled_from([0.0, 0.002, 0.01]),
)
def test_every_event_reaches_an_agent_request_before_a_boundary(
    count: int, size: int, window: int, token_delay_s: float
) -> None:
    """Default [context] settings but the window (the model's, as the fake enforces it)."""
    run_property(count, size, window, token_delay_s)


@flood_property
@given(
    count=st.integers(min_value=2, max_value=300),
    size=st.integers(min_value=500, max_value=4000),
    token_delay_s=st.sampled_from([0.0, 0.002, 0.01]),
)
def test_every_event_reaches_an_agent_request_at_the_default_window(
    count: int, size: int, token_delay_s: float
) -> None:
    """The sibling with every [context] setting at its default."""
    run_property(count, size, None, token_delay_s)


def run_property(count: int, size: int, window: int | None, token_delay_s: float) -> None:
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        anyio.run(flood, server, Path(tmp), count, size, window, token_delay_s)
        assert server.violations == []
        check_never_compacted_unseen(server, {event_id(i) for i in range(count)})
