"""Third-party MCP servers, as a user installs them (scripts/install_mcp_servers.sh):
mcp-server-time, -git and -fetch from PyPI, and the reference filesystem, memory and
everything servers from npm, all behind one real daemon against the fake model. Each is
listed and answers a call, over stdio and (everything) streamable HTTP; then a stdio
server is killed while idle and an HTTP server restarts (a new session)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.support.ports import free_port
from tests.test_mcp import ROOT, daemon, mcp_status, run_turn, settings, tool_results, until

pytestmark = pytest.mark.anyio

PYPI_BIN = ROOT / ".venv-mcp" / "bin"
NPM_BIN = ROOT / "tests" / "mcp_npm" / "node_modules" / ".bin"
PAGE = "<html><body><h1>Tide table</h1><p>High water at 06:12.</p></body></html>"


class EverythingHttp:
    """server-everything's streamable HTTP transport on one port; restartable there."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(NPM_BIN / "mcp-server-everything"), "streamableHttp"],
            env={**os.environ, "PORT": str(self.port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Up once it accepts connections (another process: nothing to await but the port).
        with socket.socket() as probe:
            for _ in range(600):
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
                assert self.process.poll() is None, "server-everything exited"
                threading.Event().wait(0.05)
        raise AssertionError("server-everything never listened")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def everything_http() -> Iterator[EverythingHttp]:
    server = EverythingHttp()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def web_page(tmp_path: Path) -> Iterator[str]:
    """A page for mcp-server-fetch, on a local port."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "tides.html").write_text(PAGE)

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(site), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/tides.html"
    finally:
        httpd.shutdown()
        thread.join()


def servers(tmp_path: Path, http_url: str) -> list[dict[str, Any]]:
    files = tmp_path / "files"
    files.mkdir()
    (files / "note.txt").write_text("remember the milk\n")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    # Trusted: the results of later calls need not wait for the owner's approval.
    return [
        {"name": "time", "command": str(PYPI_BIN / "mcp-server-time")},
        {"name": "git", "command": str(PYPI_BIN / "mcp-server-git"), "args": ["-r", str(repo)]},
        {
            "name": "fetch",
            "command": str(PYPI_BIN / "mcp-server-fetch"),
            # The page is on this machine: loopback is private, refused by default.
            "args": ["--ignore-robots-txt", "--allow-private-ips"],
        },
        {"name": "fs", "command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(files)]},
        {
            "name": "memory",
            "command": str(NPM_BIN / "mcp-server-memory"),
            "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        },
        {"name": "every", "command": str(NPM_BIN / "mcp-server-everything")},
        {"name": "everyhttp", "url": http_url},
    ]


def child_pid(name: str) -> int:
    """The pid of this process's child whose command line names ``name``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and name in cmdline:
            return int(entry.name)
    raise AssertionError(f"no child process runs {name}")


async def test_six_third_party_servers_answer_and_come_back_after_a_restart(
    tmp_path: Path, model_server: FakeModelServer, everything_http: EverythingHttp, web_page: str
) -> None:
    repo = str(tmp_path / "repo")
    model_server.push(
        Reply(
            tool_calls=[
                ToolCallSpec("time__get_current_time", {"timezone": "Europe/Lisbon"}),
                ToolCallSpec("git__git_status", {"repo_path": repo}),
                ToolCallSpec("fetch__fetch", {"url": web_page}),
                ToolCallSpec("fs__read_text_file", {"path": str(tmp_path / "files/note.txt")}),
                ToolCallSpec(
                    "memory__create_entities",
                    {"entities": [{"name": "Ana", "entityType": "person", "observations": []}]},
                ),
                ToolCallSpec("every__get-sum", {"a": 2, "b": 3}),
                ToolCallSpec("everyhttp__echo", {"message": "over http"}),
            ]
        ),
        Reply(text="All answered."),
        # After the restarts: the killed stdio server and the restarted HTTP one.
        Reply(
            tool_calls=[
                ToolCallSpec(
                    "time__convert_time",
                    {
                        "source_timezone": "UTC",
                        "time": "12:00",
                        "target_timezone": "Asia/Tokyo",
                    },
                ),
                ToolCallSpec("everyhttp__echo", {"message": "old session"}),
            ]
        ),
        # server-everything answers 400, not the spec's 404, for the forgotten session:
        # the call cannot be known unsent, so the model is told and calls again.
        Reply(tool_calls=[ToolCallSpec("everyhttp__echo", {"message": "new session"})]),
        Reply(text="Back."),
    )
    config = settings(tmp_path, model_server, *servers(tmp_path, everything_http.url))
    for server in config.mcp.servers:
        server.trusted = True
    async with daemon(config) as h:
        await run_turn(h, "ask every server once")
        first = mcp_status(h)["servers"]
        # A stdio server killed while idle is seen gone and started again, no call needed.
        killed = child_pid("mcp-server-time")
        os.kill(killed, signal.SIGKILL)
        await until(lambda: mcp_status(h)["servers"]["time"]["restarts"] == 1)
        await until(lambda: mcp_status(h)["servers"]["time"]["connected"])
        # The HTTP server restarts on its port and forgets the daemon's session.
        everything_http.stop()
        everything_http.start()
        await run_turn(h, "again, after the restarts")
        after = mcp_status(h)["servers"]
    # Each server's own answer (in the order the calls finished).
    results = tool_results(model_server, 1)
    assert len(results) == 7 and not [r for r in results if "failed" in r], results
    for expected in (
        '"timezone": "Europe/Lisbon"',  # time
        "No commits yet",  # git
        "High water at 06:12.",  # fetch, as markdown
        "remember the milk",  # filesystem
        '"name": "Ana"',  # memory
        "The sum of 2 and 3 is 5.",  # everything, stdio
        "Echo: over http",  # everything, streamable HTTP
    ):
        assert [r for r in results if expected in r], (expected, results)
    for name, status in first.items():
        assert status["connected"] and status["restarts"] == 0 and status["tools"], (name, status)
    [converted] = [r for r in tool_results(model_server, 3)[-2:] if "Asia/Tokyo" in r]
    assert '"timezone": "Asia/Tokyo"' in converted, converted
    [lost] = [r for r in tool_results(model_server, 3)[-2:] if r != converted]
    assert "lost its MCP server everyhttp" in lost, lost
    assert tool_results(model_server, 4)[-1] == "Echo: new session"
    assert after["everyhttp"]["connected"] and after["everyhttp"]["restarts"] == 1, after
