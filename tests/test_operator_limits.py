"""Issue 10, finding 6: the operator's limits cap the model's, and what the daemon
stays private: shell_exec's timeout_s, the outputs/ size cap, names kept out of
/metrics and /readyz (the data dir's permissions: tests/test_data_dir_perms.py)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from tests.daemon_harness import daemon_settings, harness
from tests.test_handlers_tools import make_ctx
from wakeful.app.http.observability import observability_routes
from wakeful.core.components.context import ComponentHealth
from wakeful.tools.registry import default_registry

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_shell_timeout_is_capped_by_tool_timeout_s(tmp_path: Path) -> None:
    """The model asks for 600 s; [loop] tool_timeout_s = 1 stops the command after 1 s."""
    tools = default_registry(default_timeout_s=1, shell_grace_s=0.2)
    started = time.monotonic()
    out = await tools.execute(
        "shell_exec", json.dumps({"command": "sleep 30", "timeout_s": 600}), make_ctx(tmp_path)
    )
    assert time.monotonic() - started < 10
    assert out.is_error
    assert out.text.startswith("(timeout_s 600 was capped to 1 s, the operator's limit")
    assert "timed out after 1 s" in out.text
    quiet = await tools.execute("shell_exec", '{"command": "echo hi"}', make_ctx(tmp_path))
    assert "capped" not in quiet.text  # the model did not ask: nothing to explain


async def test_outputs_dir_is_capped_oldest_first(tmp_path: Path) -> None:
    cap = 120_000
    tools = default_registry(outputs_max_bytes=cap)
    ctx = make_ctx(tmp_path)
    saved = []
    for _ in range(4):
        out = await tools.execute("shell_exec", '{"command": "seq 1 10000"}', ctx)
        [path] = [w for w in out.text.split() if w.startswith(str(ctx.output_dir))]
        saved.append(Path(path))
        total = sum(f.stat().st_size for f in ctx.output_dir.iterdir())
        assert total <= cap
        assert saved[-1].exists()  # the file the model was just told about stays
    assert not saved[0].exists()
    assert sorted(ctx.output_dir.iterdir()) == sorted(saved[-2:])


async def test_metrics_and_readyz_name_nobody_unless_labels_are_on(
    tmp_path: Path,
) -> None:
    settings = daemon_settings(tmp_path, "http://127.0.0.1:9", llm={"model": ""})
    async with harness(settings) as h:
        await h.send("hello", session="secret-project")
        health = h.running.registrations.health
        health["email:work:Clients-Acme"] = ComponentHealth(
            False, "Clients-Acme: login failed", required=True
        )
        scrape = (await h.client.get("/metrics")).text
        ready = await h.client.get("/readyz")
        for text in (scrape, ready.text):
            assert "secret-project" not in text
            assert "Clients-Acme" not in text and not re.search(r"\bwork\b", text)
        assert "wakeful_queue_depth 1" in scrape.splitlines()
        assert 'wakeful_component_up{component="email",required="true"} 0' in scrape
        assert ready.json()["problems"] == [
            "email: unhealthy ([server] metrics_labels = true shows which)"
        ]
        labelled = Starlette(routes=observability_routes(h.daemon, labels=True))
        transport = httpx.ASGITransport(app=labelled)
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
            full = (await client.get("/metrics")).text
            problems = (await client.get("/readyz")).json()["problems"]
        assert 'wakeful_queue_depth{session="secret-project"} 1' in full
        assert problems == ["email:work:Clients-Acme: Clients-Acme: login failed"]
