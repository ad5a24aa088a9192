"""The benchmarks' model scripts, importable by name in the fake server's own process.

They are passed as `bench.responders:<name>` to the out-of-process fake server
(tests/fakes/control_server.py), so this module imports only the reply types.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.model_replies import Reply, ToolCallSpec

STOP = "stop!"


def last_user_text(body: dict[str, Any]) -> str:
    """The last non-status user message (as tests/daemon_harness.py, without its imports)."""
    for message in reversed(body["messages"]):
        content = message.get("content") or ""
        if message["role"] == "user" and not content.startswith("[Agent status"):
            return str(content)
    return ""


def cancel(body: dict[str, Any]) -> Reply:
    """`essay` hangs mid-stream, `longjob <marker>` runs a long shell command, else text."""
    text = last_user_text(body)
    if STOP not in str(body["messages"]):
        if "essay" in text:
            return Reply(text="PARTIAL " * 5, hang=True)
        if "longjob" in text:
            command = f"sleep 600; echo {text.split()[-1]}"
            return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})])
    return Reply(text="ok")


def overhead(body: dict[str, Any]) -> Reply:
    """`run job <gate>` starts a command that waits for the gate file; anything else: text."""
    text = last_user_text(body)
    if "run job" in text and not any(m["role"] == "tool" for m in body["messages"]):
        command = f"while [ ! -e {text.split()[-1]} ]; do sleep 0.01; done; echo gate-opened"
        return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": command})])
    return Reply(text="ok")


SUBAGENT_MARK = "[You are a subagent"
CHILD_ANSWER_DELAY_S = 0.2  # so its parent has answered the spawn and is idle by then


def subagents(body: dict[str, Any]) -> Reply:
    """`spawn` delegates to a child, which answers at once (after a short delay); text else."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    if users and SUBAGENT_MARK in str(users[0].get("content") or ""):
        return Reply(text="done", first_token_delay_s=CHILD_ANSWER_DELAY_S)
    tool_turn = any(m["role"] == "tool" for m in body["messages"])
    if last_user_text(body).endswith(" spawn") and not tool_turn:
        arguments = {"task": "say done", "tools": ["get_time"]}
        return Reply(tool_calls=[ToolCallSpec("spawn_subagent", arguments)])
    return Reply(text="ok")
