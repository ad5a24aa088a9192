"""MCP cost: start-up time two MCP servers add, and idle CPU/RSS with three connected.

Start-up: `wakeful run` subprocesses, timed from spawn to /readyz answering 200,
without MCP servers and with two (the test catalog over stdio, 100 tools, and
over streamable HTTP, 50 tools), alternating, ``--rounds`` times each.

Idle: a daemon with three servers connected (two stdio, one HTTP), after one
message, over one window (default 60 s) next to a daemon without MCP servers;
CPU from /proc/PID/stat, RSS at the end. The MCP server processes (the stdio
servers are the daemon's children; the HTTP one is started here) are reported on
their own rows.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import (
    REPO_ROOT,
    FakeModelServer,
    print_table,
    proc_context_switches,
    proc_cpu_seconds,
    proc_rss_mib,
)
from bench.idle_cost import (
    MEASURE_HEADER,
    Subject,
    free_port,
    measure,
    stopped_at_exit,
    wake_once,
)


def catalog_stdio(name: str, tools: int, offset: int) -> str:
    args = ["-m", "tests.mcp_servers.catalog", "stdio", "--tools", str(tools)]
    args += ["--offset", str(offset)]
    return (
        f'[[mcp.servers]]\nname = "{name}"\ncommand = "{sys.executable}"\n'
        f"args = {args!r}\n".replace("'", '"')
        + f'env = {{ PYTHONPATH = "{REPO_ROOT}" }}\n\n'
    )


def start_http_catalog(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    port_file = directory / "http-port"
    command = [sys.executable, "-m", "tests.mcp_servers.catalog", "http", "--tools", "50"]
    command += ["--offset", "100", "--port-file", str(port_file)]
    process = subprocess.Popen(command, cwd=REPO_ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline:
            raise TimeoutError("the HTTP MCP server did not start within 60 s")
        time.sleep(0.05)
    return process, f"http://127.0.0.1:{port_file.read_text()}/mcp"


def start_daemon(directory: Path, token: str, model_url: str, mcp: str) -> tuple[Subject, str]:
    directory.mkdir()
    port = free_port()
    text = (
        f'[daemon]\ndata_dir = "{directory / "data"}"\nlog_level = "info"\n\n'
        f'[server]\nbind = "127.0.0.1:{port}"\nadmin_token = "{token}"\n\n'
        f'[llm]\nbase_url = "{model_url}"\nmodel = "fake-model"\napi_key = "unused"\n'
        "max_retries = 0\n\n" + mcp
    )
    config = directory / "wakeful.toml"
    config.write_text(text, encoding="utf-8")
    log = (directory / "daemon.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "wakeful", "-c", str(config), "run"],
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return Subject(directory.name, process), f"http://127.0.0.1:{port}"


def seconds_to_ready(url: str, started: float) -> float:
    with httpx.Client(base_url=url, timeout=5) as client:
        while True:
            try:
                if client.get("/readyz").status_code == 200:
                    return time.monotonic() - started
            except httpx.TransportError:
                pass
            if time.monotonic() - started > 120:
                raise TimeoutError(f"{url}/readyz did not answer 200 within 120 s")
            time.sleep(0.02)


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def measure_all(daemons: list[Subject], others: dict[str, int], seconds: float) -> list[list[str]]:
    """The daemons (as idle_cost measures them) and other processes by pid, in one window."""
    start = {pid: proc_cpu_seconds(pid) for pid in others.values()}
    switches_start = {pid: proc_context_switches(pid) for pid in others.values()}
    started = time.monotonic()
    rows = measure(daemons, seconds)
    elapsed = time.monotonic() - started
    for label, pid in others.items():
        cpu = proc_cpu_seconds(pid) - start[pid]
        switches = proc_context_switches(pid) - switches_start[pid]
        rows.append(
            [
                label,
                f"{cpu:.2f}",
                f"{100 * cpu / elapsed:.3f}",
                str(switches),
                f"{switches / elapsed:.2f}",
                f"{proc_rss_mib(pid):.1f}",
            ]
        )
    return rows


def startup(tmp: Path, token: str, model_url: str, http_url: str, rounds: int) -> list[list[str]]:
    two = catalog_stdio("files", 100, 0) + f'[[mcp.servers]]\nname = "crm"\nurl = "{http_url}"\n'
    times: dict[str, list[float]] = {"no MCP servers": [], "two MCP servers (150 tools)": []}
    for round_ in range(rounds):
        for label, mcp in (("no MCP servers", ""), ("two MCP servers (150 tools)", two)):
            started = time.monotonic()
            subject, url = start_daemon(tmp / f"start-{round_}-{len(mcp)}", token, model_url, mcp)
            with stopped_at_exit([subject]):
                times[label].append(seconds_to_ready(url, started))
    base = statistics.median(times["no MCP servers"])
    return [
        [label, f"{statistics.median(v):.2f}", f"{statistics.median(v) - base:+.2f}"]
        for label, v in times.items()
    ]


def main(seconds: float, rounds: int) -> None:
    token = secrets.token_urlsafe(24)
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        http_process, http_url = start_http_catalog(tmp)
        try:
            started_rows = startup(tmp, token, server.base_url, http_url, rounds)
            three = (
                catalog_stdio("files", 100, 0)
                + catalog_stdio("more", 20, 100)
                + f'[[mcp.servers]]\nname = "crm"\nurl = "{http_url}"\n'
            )
            with_mcp, url_mcp = start_daemon(
                tmp / "three MCP servers", token, server.base_url, three
            )
            without, url_none = start_daemon(tmp / "no MCP servers", token, server.base_url, "")
            with stopped_at_exit([with_mcp, without]):
                wake_once(url_mcp, token, expect_reply=True)
                wake_once(url_none, token, expect_reply=True)
                seconds_to_ready(url_mcp, time.monotonic())
                server_pids = children(with_mcp.process.pid)
                time.sleep(2)  # the first connections' work is over
                labelled = {f"  MCP stdio server, pid {pid}": pid for pid in server_pids}
                labelled["  MCP HTTP server (started by the bench)"] = http_process.pid
                rows = measure_all([without, with_mcp], labelled, seconds)
        finally:
            http_process.kill()
            http_process.wait()
    print(f"start-up: spawn to /readyz 200, median of {rounds} (s)")
    print_table(["daemon", "seconds", "added"], started_rows)
    print()
    print(f"idle cost over {seconds:g} s, after one message (CPU % is of one core)")
    print_table(MEASURE_HEADER, rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="idle measuring window")
    parser.add_argument("--rounds", type=int, default=3, help="start-ups of each kind")
    options = parser.parse_args()
    main(options.seconds, options.rounds)
