"""MCP servers: two real servers written with the SDK (stdio and streamable HTTP, 150 tools
between them) behind a daemon run against the fake model: deferred listing, calls by
name, search_tools, progress, taint, a server killed mid-call, list_changed, filters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.mcp_servers.catalog import INJECTION
from wakeful.app.config import ConfigError, load_settings

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
STDIO_TOOLS = 100  # + 4 with behaviour
HTTP_TOOLS = 50  # + 4 with behaviour


def start_http_server(
    port_file: Path, port: int = 0, module: str = "catalog"
) -> subprocess.Popen[bytes]:
    """A test server over streamable HTTP; its port is in ``port_file`` once it listens."""
    port_file.unlink(missing_ok=True)
    command = [sys.executable, "-m", f"tests.mcp_servers.{module}", "http"]
    if module == "catalog":
        command += ["--tools", str(HTTP_TOOLS), "--offset", "100"]
    command += ["--port-file", str(port_file), "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():  # another process writes it
        assert time.monotonic() < deadline and process.poll() is None, "no MCP HTTP server"
        time.sleep(0.05)
    return process


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The catalog over streamable HTTP, on a port of its own choosing."""
    port_file = tmp_path / "mcp-http-port"
    process = start_http_server(port_file)
    try:
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        process.kill()
        process.wait()


def stdio_server(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {
        "name": "files",
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.catalog", "stdio", "--tools", str(STDIO_TOOLS)],
        # The server runs from the repository (its module) and says where its pid is.
        "env": {"PYTHONPATH": str(ROOT), "MCP_PID_FILE": str(tmp_path / "stdio.pid")},
        **extra,
    }


def settings(tmp_path: Path, model_server: FakeModelServer, *servers: dict[str, Any]) -> Any:
    return daemon_settings(tmp_path / "data", model_server.base_url, mcp={"servers": list(servers)})


@asynccontextmanager
async def daemon(config: Any) -> AsyncIterator[Harness]:
    async with harness(config) as h:
        yield h


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def tool_results(model_server: FakeModelServer, index: int) -> list[str]:
    body = model_server.requests[index].body
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def mcp_status(h: Harness) -> dict[str, Any]:
    status: dict[str, Any] = h.running.registrations.status_providers["mcp"]()
    return status


async def until(condition: Any, timeout_s: float = 20.0) -> None:
    """Until ``condition()`` holds: for state another process changes (a server's
    restart, its tool list), where there is no event to await."""
    with anyio.fail_after(timeout_s):
        while not condition():  # noqa: ASYNC110  # no event to await: see above
            await anyio.sleep(0.05)


async def run_turn(h: Harness, text: str) -> None:
    async with watch_feed(h) as feed:
        await h.send(text)
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", 30)


async def test_150_tools_deferred_called_by_name_searched_and_tainting(
    tmp_path: Path, model_server: FakeModelServer, http_server: str
) -> None:
    """Both servers' tools are named in the prompt, not sent; a call by name on the
    first turn runs, a trusted server's result does not taint, an untrusted one's does;
    then a tool declared read still runs, a consequential one waits for the owner, and
    search_tools finds and loads a tool."""
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("crm__create_deployment", {"query": "api v2"})]),
        Reply(tool_calls=[ToolCallSpec("files__weather_report", {"city": "Porto"})]),
        Reply(tool_calls=[ToolCallSpec("files__slow_count", {"steps": 3, "delay_s": 0.05})]),
        Reply(tool_calls=[ToolCallSpec("files__whoami", {})]),
        Reply(tool_calls=[ToolCallSpec("search_tools", {"query": "archive an incident"})]),
        Reply(text="Done."),
    )
    files = stdio_server(tmp_path, effects={"slow_count": "read"})
    config = settings(tmp_path, model_server, files, {"name": "crm", "url": http_server})
    config.mcp.servers[1].trusted = True
    async with daemon(config) as h:
        await run_turn(h, "deploy, count, find, weather")
        taint = await h.running.safety.taints.get("main")
        status = (await h.client.get("/api/status")).json()
    first = model_server.requests[0].body
    system = first["messages"][0]["content"]
    assert not [n for n in names(first["tools"]) if "__" in n]  # deferred, all of them
    assert "mcp crm: archive_alert" not in system  # listed by namespaced name
    assert "mcp crm: crm__archive_alert, crm__archive_comment" in system
    assert "mcp files: files__archive_branch" in system
    listed = [n for n in system.replace(",", " ").split() if "__" in n]
    assert len(listed) == STDIO_TOOLS + HTTP_TOOLS + 8
    # The trusted HTTP server's tool ran and did not taint ...
    assert tool_results(model_server, 1) == ["create_deployment answered 'api v2' (limit 10)"]
    assert names(model_server.requests[1].body["tools"])[-1] == "crm__create_deployment"
    # The untrusted stdio server's weather report is a stranger's words: it taints.
    assert INJECTION in tool_results(model_server, 2)[-1]
    assert taint is not None and taint.summary().startswith("mcp files weather_report")
    # Tainted: a tool declared read runs, one left "network" waits for the owner.
    assert tool_results(model_server, 3)[-1] == "counted to 3"
    assert "waiting for the owner's approval" in tool_results(model_server, 4)[-1]
    # search_tools found the HTTP server's tool and loaded it.
    search = tool_results(model_server, 5)[-1]
    assert "crm__archive_incident (loaded" in search
    assert "crm__archive_incident" in names(model_server.requests[5].body["tools"])
    health = status["components"]
    assert health["mcp:files"]["ok"] and health["mcp:crm"]["ok"], health
    # Every request kept the same system prompt and resident block.
    resident = len(first["tools"])
    for request in model_server.requests[1:]:
        assert request.body["messages"][0] == first["messages"][0]
        assert json.dumps(request.body["tools"][:resident]) == json.dumps(first["tools"])


async def test_a_stdio_server_is_started_once_when_its_tools_are_known(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The first start-up ever asks the server for its list (a short probe), then
    connects; every later start-up registers the list kept from last time and starts
    the server once (that connection brings the adapters in line with its list now)."""
    starts = tmp_path / "starts"
    model_server.push(
        Reply(text="hello"),
        Reply(tool_calls=[ToolCallSpec("files__weather_report", {"city": "Porto"})]),
        Reply(text="Sunny."),
    )
    files = stdio_server(tmp_path)
    files["env"]["MCP_STARTS_FILE"] = str(starts)
    async with daemon(settings(tmp_path, model_server, files)) as h:
        await until(lambda: mcp_status(h)["servers"]["files"]["connected"])
        await run_turn(h, "hello")
        listed = mcp_status(h)["servers"]["files"]["tools"]
    assert len(starts.read_text().split()) == 2  # the probe, then the connection
    async with daemon(settings(tmp_path, model_server, files)) as h:
        await until(lambda: mcp_status(h)["servers"]["files"]["connected"])
        await run_turn(h, "the weather in Porto?")
        tools = mcp_status(h)["servers"]["files"]["tools"]
    assert len(starts.read_text().split()) == 3  # this start-up: one
    assert tools == listed and len(listed) > STDIO_TOOLS  # + the tools with behaviour
    assert "Porto" in tool_results(model_server, 2)[-1]


async def test_progress_reaches_task_status(tmp_path: Path, model_server: FakeModelServer) -> None:
    """A server's progress notifications for a call show in the session's task views."""
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("files__slow_count", {"steps": 40, "delay_s": 0.05})]),
        Reply(text="Counted."),
    )
    config = settings(tmp_path, model_server, stdio_server(tmp_path))
    async with daemon(config) as h, watch_feed(h) as feed:
        await h.send("count slowly")
        await feed.wait_for(lambda i: i["type"] == "tool" and i["state"] == "started", 30)
        loop = h.daemon.dispatcher.sessions.get("main")
        await until(lambda: any("progress" in t for t in loop.all_tasks.running()))
        # Shown once: the loop's entry (which owns the call) with the server's progress.
        [task] = loop.all_tasks.running()
        assert task["kind"] == "mcp_call" and task["tool"] == "files__slow_count"
        assert task["task_id"] == f"task-{task['call_id']}"
        assert "/40 (" in task["progress"] and "%): counted " in task["progress"]
        assert "progress" in (loop.all_tasks.describe(task["task_id"]) or {})
        mcp_id = f"mcp-{task['call_id']}"
        assert (loop.all_tasks.describe(mcp_id) or {}).get("tool") == "files__slow_count"
        request = await loop.next_request()
        bar = request.messages[-1]["content"]
        assert bar.count(task["call_id"]) == 1 and "files__slow_count for " in bar, bar
        assert ", progress " in bar
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", 30)
    assert tool_results(model_server, 1) == ["counted to 40"]


async def test_a_server_killed_mid_call_is_restarted_and_the_next_call_works(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("files__slow_count", {"steps": 200, "delay_s": 0.05})]),
        Reply(tool_calls=[ToolCallSpec("files__whoami", {})]),
        Reply(text="Back."),
    )
    pid_file = tmp_path / "stdio.pid"
    async with daemon(settings(tmp_path, model_server, stdio_server(tmp_path))) as h:
        async with watch_feed(h) as feed:
            await h.send("count, then who are you")
            await feed.wait_for(lambda i: i["type"] == "tool" and i["state"] == "started", 30)
            # Progress means the run phase's server serves the call (the pid file first
            # held the pid of the start-up probe's server, which has exited).
            loop = h.daemon.dispatcher.sessions.get("main")
            await until(lambda: any("progress" in t for t in loop.all_tasks.running()))
            killed = int(pid_file.read_text())
            os.kill(killed, signal.SIGKILL)
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", 40)
        status = mcp_status(h)["servers"]["files"]
    lost = tool_results(model_server, 1)[-1]
    assert lost.startswith("files__slow_count (call ") and "lost its MCP server files" in lost
    assert "may have partially executed" in lost
    after = tool_results(model_server, 2)[-1]
    assert after.startswith("pid ") and int(after.split()[1]) != killed
    assert status["restarts"] == 1 and status["connected"]


async def test_list_changed_adds_and_withdraws_tools_without_touching_the_prefix(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("files__reshape_tools", {})]),
        Reply(text="Reshaped."),
        # The prompt's listing stays as it was: the new tool is found by search_tools.
        Reply(tool_calls=[ToolCallSpec("search_tools", {"query": "fresh tool added"})]),
        Reply(
            tool_calls=[
                ToolCallSpec("files__fresh_tool", {"note": "hi"}),
                ToolCallSpec("files__whoami", {}),
            ]
        ),
        Reply(text="Done."),
    )
    # Trusted, so its results do not put the later calls behind the owner's approval.
    server = stdio_server(tmp_path, trusted=True)
    async with daemon(settings(tmp_path, model_server, server)) as h:
        await run_turn(h, "reshape")
        await until(lambda: "files__fresh_tool" in mcp_status(h)["servers"]["files"]["tools"])
        await run_turn(h, "use the new tool")
        status = mcp_status(h)["servers"]["files"]
    assert status["withdrawn"] == ["files__whoami"]
    assert "files__fresh_tool (loaded" in tool_results(model_server, 3)[-1]
    results = tool_results(model_server, 4)[-2:]
    assert "fresh_tool got hi" in results
    [gone] = [text for text in results if text != "fresh_tool got hi"]
    assert gone.startswith("files__whoami is no longer offered by MCP server files")
    first, *later = (r.body for r in model_server.requests)
    resident = len(first["tools"])
    for body in later:
        assert body["messages"][0] == first["messages"][0]  # the listing was not rewritten
        assert json.dumps(body["tools"][:resident]) == json.dumps(first["tools"])
    # Loaded in calling order after the block: what search_tools matched (the new tool
    # first), then a withdrawn tool called by name too.
    tail = names(later[-1]["tools"])[resident:]
    assert tail[:2] == ["files__reshape_tools", "files__fresh_tool"], tail
    assert tail[-1] == "files__whoami" and len(tail) == len(set(tail)), tail


async def test_allow_and_deny_globs_pick_the_tools(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    server = stdio_server(tmp_path, tools={"allow": ["*_invoice", "whoami"], "deny": ["delete_*"]})
    async with daemon(settings(tmp_path, model_server, server)) as h:
        status = mcp_status(h)["servers"]["files"]
        registered = h.running.registrations.tools.names()
    assert status["tools"] == [
        "files__archive_invoice",
        "files__create_invoice",
        "files__get_invoice",
        "files__list_invoice",
        "files__update_invoice",
        "files__whoami",
    ]
    assert "delete_invoice" in status["filtered_out"]
    assert sorted(n for n in registered if n.startswith("files__")) == status["tools"]


async def test_an_unreachable_server_fails_readiness_only_when_required(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    ghost = {"name": "ghost", "command": str(tmp_path / "no-such-server")}
    async with daemon(settings(tmp_path, model_server, ghost)) as h:
        assert (await h.client.get("/readyz")).status_code == 200
        health = (await h.client.get("/api/status")).json()["components"]["mcp:ghost"]
    assert not health["ok"] and "cannot connect" in health["detail"]
    async with daemon(settings(tmp_path, model_server, {**ghost, "required": True})) as h:
        ready = await h.client.get("/readyz")
    assert ready.status_code == 503 and "mcp" in ready.text


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ('name = "x"', "needs exactly one of command (a stdio server) or url"),
        ('name = "x"\ncommand = "srv"\ncolour = "red"', "colour"),
        ('name = "x"\nurl = "ftp://example.com"', "url must start with http:// or https://"),
        ('name = "bad name"\ncommand = "srv"', "mcp.servers"),
        ('name = "x"\ncommand = "srv"\neffect = "telepathy"', "effect"),
    ],
)
def test_a_bad_server_entry_is_one_line_naming_the_key(
    tmp_path: Path, entry: str, expected: str
) -> None:
    path = tmp_path / "wakeful.toml"
    path.write_text(f"[[mcp.servers]]\n{entry}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert expected in message and "mcp.servers" in message and "\n" not in message, message


def test_headers_file_lines_are_read_and_redacted(tmp_path: Path) -> None:
    from wakeful.kernel.logging import redact_text
    from wakeful.mcp.transport import read_headers

    path = tmp_path / "headers"
    path.write_text("# tokens\nAuthorization: Bearer s3cret-mcp-token\n\nX-Team: blue\n")
    assert read_headers(path, "mcp.servers.crm.headers_file") == {
        "Authorization": "Bearer s3cret-mcp-token",
        "X-Team": "blue",
    }
    assert "s3cret-mcp-token" not in redact_text("sent Bearer s3cret-mcp-token")
    path.write_text("Bearer s3cret-without-a-name\n")
    with pytest.raises(ConfigError) as info:
        read_headers(path, "mcp.servers.crm.headers_file")
    assert "line 1" in str(info.value) and "s3cret" not in str(info.value)


class _ListedView:
    def __init__(self, *tasks: dict[str, Any]) -> None:
        self.tasks = list(tasks)

    def describe(self, task_id: str) -> dict[str, Any] | None:
        return next((t for t in self.tasks if t["task_id"] == task_id), None)

    def list_tasks(self) -> list[dict[str, Any]]:
        return list(self.tasks)

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        return self.describe(task_id)


def test_a_call_is_listed_once_and_a_part_without_its_owner_on_its_own() -> None:
    from wakeful.core.loop.task_views import CombinedTaskView

    loop = _ListedView({"task_id": "task-a", "tool": "x__t", "state": "running", "runtime_s": 3})
    mcp = _ListedView(
        {"task_id": "mcp-a", "part_of": "task-a", "kind": "mcp_call", "progress": "1/2",
         "state": "running", "runtime_s": 2},
        {"task_id": "mcp-b", "part_of": "task-b", "kind": "mcp_call", "state": "done"},
    )  # fmt: skip
    view = CombinedTaskView([loop, mcp])
    assert view.list_tasks() == [
        {"task_id": "task-a", "tool": "x__t", "state": "running", "runtime_s": 3,
         "kind": "mcp_call", "progress": "1/2"},
        {"task_id": "mcp-b", "part_of": "task-b", "kind": "mcp_call", "state": "done"},
    ]  # fmt: skip
    assert view.describe("task-a") == view.list_tasks()[0]
    assert view.describe("mcp-a") == mcp.tasks[0]


async def test_a_low_level_server_with_only_tools_connects_and_its_errors_reach_the_model(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The SDK's low-level Server with only tools declares no tool list changes and does
    not serve subscriptions/listen: its tools are called all the same, and a JSON-RPC
    error it answers reaches the model as the server's own message."""
    model_server.push(
        Reply(
            tool_calls=[
                ToolCallSpec("low__echo", {"text": "hi"}),
                ToolCallSpec("low__refuse", {"reason": "no quota left"}),
            ]
        ),
        Reply(text="Done."),
    )
    low = {
        "name": "low",
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.lowlevel"],
        "env": {"PYTHONPATH": str(ROOT)},
        "trusted": True,
    }
    async with daemon(settings(tmp_path, model_server, low)) as h:
        await run_turn(h, "echo, then refuse")
        status = mcp_status(h)["servers"]["low"]
    assert tool_results(model_server, 1) == [
        "echo hi",
        "low__refuse failed on MCP server low: refused: no quota left (JSON-RPC error -32602)",
    ]
    assert status["connected"] and status["restarts"] == 0, status


async def test_a_low_level_http_server_that_restarts_answers_the_next_call(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The low-level server over streamable HTTP (no listen stream, so nothing but the
    next call meets the restart): killed and started again on its port between two
    turns, it answers both. (On 2026-07-28 it keeps no session to lose.)"""
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("low__echo", {"text": "before"})]),
        Reply(text="One."),
        Reply(tool_calls=[ToolCallSpec("low__echo", {"text": "after"})]),
        Reply(text="Two."),
    )
    port_file = tmp_path / "mcp-http-port"
    process = start_http_server(port_file, module="lowlevel")
    try:
        port = int(port_file.read_text())
        low = {"name": "low", "url": f"http://127.0.0.1:{port}/mcp", "trusted": True}
        async with daemon(settings(tmp_path, model_server, low)) as h:
            await run_turn(h, "before the restart")
            process.kill()
            process.wait()
            process = start_http_server(port_file, port, module="lowlevel")
            await run_turn(h, "after the restart")
            status = mcp_status(h)["servers"]["low"]
    finally:
        process.kill()
        process.wait()
    assert tool_results(model_server, 1) == ["echo before"]
    assert tool_results(model_server, 3)[-1] == "echo after"
    assert status["connected"], status
