"""A scripted model for subagent scenarios: a parent that delegates, children that run
shell commands. It decides from the request alone (which session it is, what came back),
so three children and their parent may call it in any order, before and after a restart."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from tests.fakes.model_server import Reply, ToolCallSpec

CHILD_MARK = "[You are a subagent"
ASK = "Delegate the three lookups"
ACK = (
    "I have delegated the three lookups to subagents and will combine their answers "
    "when they arrive."
)


def conversation(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m
        for m in body["messages"]
        if m["role"] != "system" and not str(m.get("content") or "").startswith("[Agent status")
    ]


def texts(messages: list[dict[str, Any]], role: str) -> list[str]:
    return [str(m.get("content") or "") for m in messages if m["role"] == role]


class DelegatingModel:
    """``letters``: one child per letter; ``command(letter)``: the shell line it runs."""

    def __init__(self, letters: str = "ABC", command: str = "sleep 1; echo out-{x}") -> None:
        self.letters = letters
        self.command = command
        self.ack_delay_s = 0.0  # per token of the parent's acknowledgement (to interrupt it)
        self.background = ""  # letters whose child uses start_shell rather than shell_exec

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = conversation(body)
        first = str(messages[0].get("content") or "") if messages else ""
        if CHILD_MARK in first:
            return self.child(messages, re.findall(r"Task: fetch (\w)", first)[0])
        return self.parent(messages)

    def child(self, messages: list[dict[str, Any]], letter: str) -> Reply:
        if any(f"out-{letter}" in t for t in texts(messages, "tool")):
            return Reply(text=f"found {letter}: out-{letter}")
        tool = "start_shell" if letter in self.background else "shell_exec"
        if messages[-1]["role"] == "tool" and tool == "start_shell":
            return Reply(text=f"started the lookup of {letter} in the background")
        arguments = {"command": self.command.format(x=letter)}
        return Reply(tool_calls=[ToolCallSpec(tool, arguments)])

    def parent(self, messages: list[dict[str, Any]]) -> Reply:
        users = texts(messages, "user")
        found = sorted(set(re.findall(r"Subagent sub-\w+ finished: found (\w)", "\n".join(users))))
        last = messages[-1]
        if last["role"] == "tool":
            return Reply(text=ACK, token_delay_s=self.ack_delay_s)
        text = str(last.get("content") or "")
        if ASK in text:
            calls = [
                ToolCallSpec(
                    "spawn_subagent", {"task": f"fetch {x}", "tools": ["shell_exec", "start_shell"]}
                )
                for x in self.letters
            ]
            return Reply(tool_calls=calls)
        if found == sorted(self.letters):
            return Reply(text="ALL DONE: " + " ".join(found))
        if found:
            return Reply(text=f"so far: {' '.join(found)}")
        return Reply(text="noted; the subagents are still working")


def spawned_ids(messages: list[dict[str, Any]]) -> list[str]:
    ids = []
    for content in texts(messages, "tool"):
        if content.startswith("started subagent"):
            ids.append(json.loads(content.split("\n", 1)[1])["task_id"])
    return ids


async def poll(check: Callable[[], Awaitable[object]], timeout_s: float = 20.0) -> None:
    """Until ``check`` holds: the state it reads (the daemon's records, a process group,
    a file a command writes) publishes no event to await, so it is re-read, bounded."""
    with anyio.fail_after(timeout_s):
        while not await check():  # noqa: ASYNC110 - no event exists for this state
            await anyio.sleep(0.05)
