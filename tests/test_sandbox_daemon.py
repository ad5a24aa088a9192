"""The sandbox as the whole daemon builds it: fail closed when bubblewrap is missing.

Through the in-process daemon and the fake model, with the default ``sandbox = "auto"``
(tests/daemon_harness.py writes "none" for the scenarios; these tests put the default
back on purpose): with bubblewrap the model's command runs confined; without it the
tools that run programs are off, the log, /api/status and the call's result say why,
and nothing runs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.daemon_process import free_port, run_to_exit, write_config
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.test_sandbox import sandbox_user_processes  # noqa: F401 - a fixture
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.safety.config import SafetySection
from wakeful.safety.sandbox import PROCESS_TOOLS

pytestmark = pytest.mark.anyio


async def run_command(h: Harness, model: FakeModelServer, tool: str, command: str) -> str:
    """The model calls ``tool`` with ``command``; returns the tool result it got back."""
    model.push(Reply(tool_calls=[ToolCallSpec(tool, {"command": command})]), Reply(text="done"))
    async with watch_feed(h) as feed:
        await h.send("run it")
        await feed.wait_for(lambda i: i["type"] == "reply" and i.get("text") == "done")
    messages = await h.trajectory()
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert results, messages
    return str(results[-1])


async def call_tool(h: Harness, name: str, args: dict[str, Any]) -> ToolOutput:
    async def reply(_: str) -> None:
        return None

    data_dir = h.running.data_dir
    ctx = ToolContext(
        "main",
        "call_test",
        data_dir / "workspace",
        data_dir,
        CombinedTaskView([]),
        reply,  # type: ignore[arg-type]
    )
    return await h.running.registrations.tools.execute(name, json.dumps(args), ctx)


def auto_settings(tmp_path: Path, model: FakeModelServer) -> Any:
    # The harness writes sandbox = "none"; here the default is what is under test.
    assert SafetySection().sandbox == "auto"
    return daemon_settings(tmp_path / "data", model.base_url, safety={"sandbox": "auto"})


@pytest.mark.usefixtures("sandbox_user_processes")  # the fork bomb tests fill nobody's limit
async def test_auto_with_bubblewrap_runs_commands_confined(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    assert shutil.which("bwrap"), "bubblewrap must be installed (scripts/check.sh does)"
    async with harness(auto_settings(tmp_path, model_server)) as h:
        status = (await h.client.get("/api/status")).json()
        assert status["sandbox"]["kind"] == "bubblewrap", status["sandbox"]
        # pid 1 of the command's own pid namespace is bubblewrap's init, not the host's.
        result = await run_command(
            h, model_server, "shell_exec", "cat /proc/1/comm; id -u; echo ran > ran.txt"
        )
    assert "bwrap" in result and "exit status 0" in result, result
    if os.geteuid() == 0:  # as root, the command runs as nobody
        assert "\n65534\n" in result, result
    assert (tmp_path / "data" / "workspace" / "ran.txt").read_text() == "ran\n"


@pytest.fixture
def path_without_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH like a host without the bubblewrap package: prlimit is there, bwrap is not."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("prlimit", "setpriv", "sh"):
        found = shutil.which(program)
        assert found is not None
        os.symlink(found, bin_dir / program)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert shutil.which("bwrap") is None


@pytest.mark.usefixtures("path_without_bwrap")
async def test_auto_without_bubblewrap_switches_the_process_tools_off(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    with capture_logs() as logs:
        async with harness(auto_settings(tmp_path, model_server)) as h:
            status = (await h.client.get("/api/status")).json()["sandbox"]
            model_server.push(Reply(text="done"))
            async with watch_feed(h) as feed:
                await h.send("hello")
                await feed.wait_for(lambda i: i["type"] == "reply")
            # A model that calls one by name anyway (the registry, as the loop calls it:
            # the fake model server would refuse a trajectory naming a tool not offered).
            results = [
                await call_tool(h, tool, {"command": "echo ran > ran.txt"})
                for tool in ("shell_exec", "start_shell")
            ]
            monitor = await call_tool(h, "monitor_shell", {"task_id": "x", "patterns": ["y"]})
    assert status["kind"] == "off", status
    assert status["shell_tools"].startswith("off: no sandbox: bwrap is not on PATH"), status
    assert 'sandbox = "none"' in status["shell_tools"] and "\n" not in status["shell_tools"]
    off = [e for e in logs if e["event"] == "shell tools are off"]
    assert len(off) == 1 and off[0]["log_level"] == "error", logs
    for tool, output in [
        *zip(("shell_exec", "start_shell"), results, strict=True),
        ("monitor_shell", monitor),
    ]:
        assert output.is_error, output
        assert f"{tool} is off on this daemon: no sandbox: bwrap is not on PATH" in output.text
    assert not (tmp_path / "data" / "workspace" / "ran.txt").exists()  # nothing ran
    # The model is not offered them: not in the tool list, not in the prompt's listing.
    first = model_server.requests[0].body
    offered = {t["function"]["name"] for t in first["tools"]}
    assert offered and not offered & set(PROCESS_TOOLS), offered
    assert not any(name in json.dumps(first["messages"]) for name in PROCESS_TOOLS)


@pytest.mark.usefixtures("path_without_bwrap")
async def test_none_written_by_the_operator_still_runs_unconfined(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """sandbox = "none" is the operator's explicit choice: commands run (with limits)."""
    settings = daemon_settings(tmp_path / "data", model_server.base_url)  # sandbox = "none"
    async with harness(settings) as h:
        assert (await h.client.get("/api/status")).json()["sandbox"]["kind"] == "none"
        result = await run_command(h, model_server, "shell_exec", "echo ran > ran.txt")
    assert "exit status 0" in result, result
    assert (tmp_path / "data" / "workspace" / "ran.txt").read_text() == "ran\n"


async def test_file_tools_never_write_the_standing_instructions_or_skills(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """write_file and edit_file are refused (not asked about) on AGENTS.md, existing or
    not, and on anything under a skill root inside the workspace."""
    workspace = tmp_path / "data" / "workspace"
    skills = workspace / "skills"
    (skills / "mine").mkdir(parents=True)
    (skills / "mine" / "SKILL.md").write_text("---\nname: mine\ndescription: d\n---\nbody\n")
    settings = daemon_settings(
        tmp_path / "data", model_server.base_url, skills={"paths": [str(skills)]}
    )
    async with harness(settings) as h:
        created = await call_tool(h, "write_file", {"path": "AGENTS.md", "content": "obey"})
        skill = await call_tool(
            h, "write_file", {"path": "skills/evil/SKILL.md", "content": "evil"}
        )
        edited = await call_tool(
            h,
            "edit_file",
            {"path": "skills/mine/SKILL.md", "old_text": "body", "new_text": "evil"},
        )
        (workspace / "AGENTS.md").write_text("Answer in English.\n")  # the owner's, by hand
        changed = await call_tool(
            h,
            "edit_file",
            {"path": "AGENTS.md", "old_text": "English", "new_text": "whatever they say"},
        )
        pending = (await h.client.get("/api/approvals")).json()
    for output in (created, skill, edited, changed):
        assert output.is_error and "only the owner edits these" in output.text, output.text
    assert (workspace / "AGENTS.md").read_text() == "Answer in English.\n"
    assert not (skills / "evil").exists()
    assert "evil" not in (skills / "mine" / "SKILL.md").read_text()
    assert pending == [], pending  # refused outright: nothing for the owner to approve


def test_a_required_sandbox_that_cannot_work_stops_the_start_in_one_line(tmp_path: Path) -> None:
    """[safety] sandbox = "bubblewrap" where bwrap is missing: the probe runs in a worker
    thread beside the start, and its refusal is still the start's one line, exit 2 (a
    configuration the machine cannot honour), no traceback, no server."""
    config = write_config(tmp_path / "data", None, free_port())
    config.write_text(config.read_text().replace('sandbox = "none"', 'sandbox = "bubblewrap"'))
    result = run_to_exit(config, PATH=str(Path(sys.executable).parent))  # no bwrap there
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith('wakeful: cannot start: safety.sandbox = "bubblewrap" but'), last
    assert "apt-get install bubblewrap" in last
    assert "Traceback" not in result.stderr
    assert "wakeful is listening" not in result.stdout
