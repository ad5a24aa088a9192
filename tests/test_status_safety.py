"""`wakeful status` shows what waits for the owner: pending approvals, tainted
sessions and tripped breakers, each with the command that acts on it.

A real daemon: a stranger's webhook taints session ``main`` and leaves a pending
approval; in session ``ops`` the owner's model tries what the reviewer refuses,
which trips a breaker set to trip after one denial.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec, text_reply
from tests.test_approvals import settings_for, tainted_call
from tests.test_chat_foundation import run_cli, write_cli_config

pytestmark = pytest.mark.anyio
NOTHING = "needs you: nothing (no approval waiting, no session tainted, no breaker tripped)\n"


async def test_status_lists_pending_approvals_tainted_sessions_and_tripped_breakers(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wide terminal: the lines are compared whole (the 80-column layout is the next test's).
    monkeypatch.setenv("COLUMNS", "240")
    async with harness(settings_for(tmp_path, model_server, breaker_denials=1)) as h:
        config = write_cli_config(tmp_path, h.running.url)
        calm = await run_cli(["-c", str(config), "status"])
        assert NOTHING in calm

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
        # What needs the owner comes before the parts, one line each with its command.
        start = lines.index("needs you:")
        assert start < next(i for i, line in enumerate(lines) if line.startswith("parts: "))
        safety = lines[start:]
        assert "  - 1 approval waiting (`wakeful approvals` lists them)" in safety
        tainted = [line for line in safety if line.startswith("  - tainted main: since ")]
        assert len(tainted) == 1 and "webhook.received from forms" in tainted[0]
        assert tainted[0].endswith("(`wakeful taint clear main` trusts it again)")
        assert "  - tripped breaker ops: 1 denied calls (`wakeful breaker reset ops`)" in safety
        status = (await h.client.get("/api/status")).json()
        assert status["safety"] == (await h.client.get("/api/safety")).json()
        assert status["safety"]["pending_approvals"] == 1 and approval["session"] == "main"

        model_server.push(text_reply("ok"))
        async with watch_feed(h) as feed:
            await run_cli(["-c", str(config), "deny", approval["id"]])
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        denied = await run_cli(["-c", str(config), "status"])
        # The owner's own no counts towards the breaker too.
        assert "  - tripped breaker main: 1 denied calls (`wakeful breaker reset main`)" in denied
        await run_cli(["-c", str(config), "taint", "clear", "main"])
        for session in ("main", "ops"):
            await run_cli(["-c", str(config), "breaker", "reset", session])
        after = await run_cli(["-c", str(config), "status"])
        assert NOTHING in after


async def test_status_on_the_defaults_reads_top_down_in_a_screen_of_80_columns(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's own sections on its defaults: the model, then the sessions, then
    what needs the owner, each other part in one line; a screen, not 76 lines."""
    monkeypatch.setenv("COLUMNS", "80")  # the terminal, whatever runs the tests
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        config = write_cli_config(tmp_path, h.running.url)
        for session in ("main", "ops"):
            model_server.push(text_reply(f"hello {session}"))
            async with watch_feed(h, session) as feed:
                await h.send("hi", session=session)
                await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        lines = (await run_cli(["-c", str(config), "status"])).splitlines()
    assert lines[0] == "wakeful: running"
    heads = [line.split(":")[0] for line in lines if not line.startswith(" ")]
    assert heads[:6] == ["wakeful", "model", "sessions", "needs you", "events", "store"], heads
    assert lines[lines.index("sessions: 2") + 1].startswith("  main: idle, context ")
    assert lines[1].startswith("model: ")
    assert lines[2].startswith("  health: ok, last success ")
    assert len(lines) <= 22, "\n".join(lines)
    # Wider only where one word is (a long path cannot be broken).
    too_wide = [line for line in lines if len(line) > 80 and " " in line.strip()]
    assert too_wide == [], too_wide
    assert lines[-1] == "(`wakeful status --all`: every field; `--json`: as the daemon says it)"
