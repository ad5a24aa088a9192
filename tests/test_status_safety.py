"""`wakeful status` shows what waits for the owner: pending approvals, tainted
sessions and tripped breakers, each with the command that acts on it.

A real daemon: a stranger's webhook taints session ``main`` and leaves a pending
approval; in session ``ops`` the owner's model tries what the reviewer refuses,
which trips a breaker set to trip after one denial.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon_harness import harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec, text_reply
from tests.test_approvals import settings_for, tainted_call
from tests.test_chat_foundation import run_cli, write_cli_config

pytestmark = pytest.mark.anyio


async def test_status_lists_pending_approvals_tainted_sessions_and_tripped_breakers(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    async with harness(settings_for(tmp_path, model_server, breaker_denials=1)) as h:
        config = write_cli_config(tmp_path, h.running.url)
        calm = await run_cli(["-c", str(config), "status"])
        assert "  pending approvals: 0\n" in calm
        assert "  tainted sessions: -\n" in calm and "  tripped breakers: -\n" in calm

        approval = await tainted_call(h, model_server)
        model_server.push(
            Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": "cat /etc/shadow"})]),
            text_reply("refused"),
        )
        async with watch_feed(h, "ops") as feed:
            await h.send("read the password file", session="ops")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")

        out = await run_cli(["-c", str(config), "status"])
        lines = out.splitlines()
        safety = lines[lines.index("safety:") :]
        assert "  pending approvals: 1 (`wakeful approvals` lists them)" in safety
        tainted = [line for line in safety if line.startswith("    - main: since ")]
        assert len(tainted) == 1 and "webhook.received from forms" in tainted[0]
        assert tainted[0].endswith("(`wakeful taint clear main` trusts it again)")
        assert "    - ops: 1 denied calls (`wakeful breaker reset ops`)" in safety
        status = (await h.client.get("/api/status")).json()
        assert status["safety"] == (await h.client.get("/api/safety")).json()
        assert status["safety"]["pending_approvals"] == 1 and approval["session"] == "main"

        model_server.push(text_reply("ok"))
        async with watch_feed(h) as feed:
            await run_cli(["-c", str(config), "deny", approval["id"]])
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        denied = await run_cli(["-c", str(config), "status"])
        # The owner's own no counts towards the breaker too.
        assert "    - main: 1 denied calls (`wakeful breaker reset main`)" in denied
        await run_cli(["-c", str(config), "taint", "clear", "main"])
        for session in ("main", "ops"):
            await run_cli(["-c", str(config), "breaker", "reset", session])
        after = await run_cli(["-c", str(config), "status"])
        assert "  tainted sessions: -\n" in after and "  tripped breakers: -\n" in after
        assert "  pending approvals: 0\n" in after
