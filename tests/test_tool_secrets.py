"""What a command the agent runs can reach, and what of its output is kept: never the
daemon's secrets (issue: `shell_exec "env"` printed the model API key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.model_replies import Reply, ToolCallSpec, text_reply
from tests.fakes.model_server import FakeModelServer
from tests.test_handlers_tools import make_ctx as context
from wakeful.kernel.logging import add_secrets
from wakeful.tools.registry import default_registry

pytestmark = pytest.mark.anyio
MODEL_KEY = "sk-live-model-key-0123456789"


async def test_a_shell_command_gets_a_minimal_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", MODEL_KEY)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", "/run/credentials/wakeful.service")
    ctx = context(tmp_path)
    output = await default_registry().execute("shell_exec", json.dumps({"command": "env"}), ctx)
    names = {line.split("=", 1)[0] for line in output.text.splitlines() if "=" in line}
    assert MODEL_KEY not in output.text and "CREDENTIALS_DIRECTORY" not in names
    assert {"PATH", "HOME"} <= names
    assert f"HOME={ctx.workspace}" in output.text


async def test_a_secret_a_tool_prints_is_redacted_before_anyone_keeps_it(
    tmp_path: Path,
) -> None:
    """A key in a file the agent reads, or in a command's output, never reaches the
    trajectory, the saved full output, or the model."""
    add_secrets([MODEL_KEY])
    ctx = context(tmp_path)
    (ctx.workspace / "notes.txt").write_text(f"key: {MODEL_KEY}\n")
    registry = default_registry()
    read = await registry.execute("read_file", json.dumps({"path": "notes.txt"}), ctx)
    shell = await registry.execute(
        "shell_exec", json.dumps({"command": f"echo {MODEL_KEY}; seq 1 5000"}), ctx
    )
    assert MODEL_KEY not in read.text and "[REDACTED]" in read.text
    assert MODEL_KEY not in shell.text and "[REDACTED]" in shell.text
    for saved in ctx.output_dir.rglob("*"):  # the full output kept for long results
        assert MODEL_KEY not in saved.read_text(errors="replace"), saved


async def test_the_model_never_sees_the_key_through_a_tool(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    from tests.daemon_harness import daemon_settings, harness

    settings = daemon_settings(tmp_path / "data", model_server.base_url)
    add_secrets([MODEL_KEY])
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": f"echo {MODEL_KEY}"})]),
        text_reply("done"),
    )
    async with harness(settings) as h:
        await h.send("print the key")
        await model_server.await_requests(2, timeout_s=10)
        trajectory = await h.trajectory()
    # (The model's own call spells the key: it wrote it. What came back must not.)
    [result] = [m for m in model_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert MODEL_KEY not in result["content"] and "[REDACTED]" in result["content"]
    stored = [m for m in trajectory if m["role"] == "tool"]
    assert stored and all(MODEL_KEY not in m["content"] for m in stored)
