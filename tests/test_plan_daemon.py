"""The plan through a real daemon: the model's update_plan call over HTTP (the streaming
fake model server), then the plan in the next request's status bar and in `wakeful
status`, on the default settings."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_replies import ToolCallSpec
from tests.fakes.model_server import FakeModelServer, Reply
from tests.test_cli import run_cli
from tests.test_http_api import TOKEN

pytestmark = pytest.mark.anyio
PLAN = {"items": [{"step": "read the report", "status": "done"}, {"step": "draft the answer"}]}


async def test_the_plan_is_in_the_next_request_and_in_wakeful_status(
    tmp_path: Path, model_server: FakeModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    model_server.push(Reply(tool_calls=[ToolCallSpec("update_plan", PLAN)]), Reply(text="On it."))
    settings = daemon_settings(
        tmp_path, model_server.base_url, server={"bind": "127.0.0.1:0", "admin_token": TOKEN}
    )
    async with harness(settings) as h:
        async with watch_feed(h) as feed:
            await h.send("answer the report")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        capsys.readouterr()
        with anyio.fail_after(10):
            assert await run_cli(h.running.url, "status") == 0
        out = capsys.readouterr().out
    first, second = model_server.requests
    status_bar = str(second.body["messages"][-1]["content"])
    assert "TODO: [1] read the report (done)" in status_bar
    assert "TODO: [2] draft the answer (pending)" in status_bar
    assert "update_plan" in [t["function"]["name"] for t in first.body["tools"]]  # resident
    assert "[1] read the report (done)" in out and "[2] draft the answer (pending)" in out
