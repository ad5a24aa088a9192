"""SPEC §9 scenario 5 and the second half of scenario 2, end to end with the fake model."""

from __future__ import annotations

import json
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import daemon_settings, harness, last_user_text, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec

pytestmark = pytest.mark.anyio

# SPEC's rates are 3, 2 and 1 %/s (the first finishes at ~33 s); ten times faster here.
SPEED_UP = 10
RATES = {"fast": 3, "medium": 2, "slow": 1}

PROGRESS_SCRIPT = """\
import sys, time
name, rate = sys.argv[1], float(sys.argv[2])
start = time.monotonic()
while True:
    percent = min(100.0, rate * (time.monotonic() - start))
    print(f"{name}: {percent:.0f}%", flush=True)
    if percent >= 100:
        break
    time.sleep(0.05)
print(f"{name} result: {name}-answer-{rate:g}", flush=True)
"""


def non_status(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m
        for m in body["messages"]
        if m["role"] != "system" and not str(m.get("content") or "").startswith("[Agent status")
    ]


def calls_by_id(messages: list[dict[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    found = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call["function"]
            found[call["id"]] = (function["name"], json.loads(function["arguments"] or "{}"))
    return found


def trailing_tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        results.insert(0, message)
    return results


class ParallelScriptsModel:
    """Plays the model of scenario 5, deciding from the last messages it is sent."""

    def __init__(self, commands: dict[str, str]) -> None:
        self.commands = commands
        self.task_ids: dict[str, str] = {}  # script name → task id
        self.progress_seen: dict[str, float] = {}
        self.cancelled: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = non_status(body)
        last = messages[-1]
        if last["role"] == "tool":
            return self._after_tools(messages)
        text = str(last.get("content") or "")
        if "Run these three scripts" in text:
            calls = [ToolCallSpec("start_shell", {"command": c}) for c in self.commands.values()]
            return Reply(tool_calls=calls)
        exited = [n for n, t in self.task_ids.items() if f"{t} (`" in text and "finished" in text]
        if exited and len(self._finished(messages)) == 1:
            others = [t for n, t in self.task_ids.items() if n not in exited]
            return Reply(tool_calls=[ToolCallSpec("task_status", {"task_id": t}) for t in others])
        if exited:
            return Reply(text=self._report(messages))
        return Reply(text="(nothing to do)")

    def _after_tools(self, messages: list[dict[str, Any]]) -> Reply:
        calls = calls_by_id(messages)
        results = trailing_tool_results(messages)
        name = calls[results[0]["tool_call_id"]][0]
        if name == "start_shell":
            for result in results:
                command = calls[result["tool_call_id"]][1]["command"]
                script = next(n for n, c in self.commands.items() if c == command)
                self.task_ids[script] = re.findall(r"shell-[0-9a-f]+", result["content"])[0]
            return Reply(text="All three scripts are running; I will check when one finishes.")
        if name == "task_status":
            under_half = []
            for result in results:
                status = json.loads(result["content"])
                script = next(n for n, t in self.task_ids.items() if t == status["task_id"])
                self.progress_seen[script] = float(status["progress"].rstrip("%"))
                if self.progress_seen[script] < 50:
                    under_half.append(status["task_id"])
            self.cancelled += under_half
            return Reply(
                tool_calls=[ToolCallSpec("cancel_task", {"task_id": t}) for t in under_half]
            )
        return Reply(text="Cancelled the scripts under 50%; waiting for the rest to finish.")

    def _finished(self, messages: list[dict[str, Any]]) -> list[str]:
        return [
            str(m["content"])
            for m in messages
            if m["role"] == "user" and "finished with exit status" in str(m["content"])
        ]

    def _report(self, messages: list[dict[str, Any]]) -> str:
        results = re.findall(r"(\w+) result: (\S+)", "\n".join(self._finished(messages)))
        done = "; ".join(f"{name} → {value}" for name, value in results)
        slow = self.progress_seen.get("slow")
        return f"Report: {done}; slow was cancelled at {slow:.0f}%."


def live_processes_with(marker: str) -> list[int]:
    """Pids of running (non-zombie) processes whose command line carries `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and stat[stat.rindex(")") + 2] != "Z":
            found.append(int(pid))
    return found


async def test_parallel_scripts_scenario(tmp_path: Path, model_server: FakeModelServer) -> None:
    """Scenario 5: when the first script ends, the 33% one is cancelled and a report follows."""
    script = tmp_path / "workspace" / "progress_script.py"  # where commands may look
    script.parent.mkdir()
    await anyio.Path(script).write_text(PROGRESS_SCRIPT)
    commands = {
        name: f"{sys.executable} {script} {name} {rate * SPEED_UP}" for name, rate in RATES.items()
    }
    model = ParallelScriptsModel(commands)
    model_server.responder = model
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        async with watch_feed(h) as feed:
            await h.send(
                "Run these three scripts at once; when the first finishes, check the "
                "others' progress; cancel any under 50%."
            )
            report = await feed.wait_for(
                lambda i: str(i.get("text", "")).startswith("Report:"), timeout_s=30
            )
        messages = await h.trajectory()
    assert 60 <= model.progress_seen["medium"] <= 90, model.progress_seen  # ≈66%
    assert 30 <= model.progress_seen["slow"] <= 48, model.progress_seen  # ≈33%
    assert model.cancelled == [model.task_ids["slow"]]
    assert live_processes_with(f"{script} slow") == []
    assert (
        "fast → fast-answer-30" in report["text"] and "medium → medium-answer-20" in report["text"]
    )
    assert_first_exit_request(model, [r.body for r in model_server.requests])
    assert_trajectory(model, messages, report["text"])


def assert_first_exit_request(model: ParallelScriptsModel, bodies: list[dict[str, Any]]) -> None:
    """The first exit reached the model while the other two still ran, with their progress."""
    first_exit = next(b for b in bodies if "finished with exit status" in last_user_text(b))
    assert model.task_ids["fast"] in last_user_text(first_exit)
    status_bar = first_exit["messages"][-1]["content"]
    assert status_bar.startswith("[Agent status")
    for name in ("medium", "slow"):
        assert re.search(rf"{model.task_ids[name]}: shell for \d+ s, progress \d+%", status_bar)


def assert_trajectory(
    model: ParallelScriptsModel, messages: list[dict[str, Any]], report: str
) -> None:
    """Two exits (none for the cancelled one), the cancel's report, then the final report."""
    exits = [m["content"] for m in messages if "finished with exit status" in str(m["content"])]
    assert len(exits) == 2 and not any(model.task_ids["slow"] in text for text in exits)
    cancel_result = next(
        m["content"] for m in messages if m["role"] == "tool" and "cancel requested" in m["content"]
    )
    assert '"state": "cancelled"' in cancel_result and "slow" in cancel_result
    tools_used = [c["function"]["name"] for m in messages for c in (m.get("tool_calls") or [])]
    assert tools_used == ["start_shell"] * 3 + ["task_status"] * 2 + ["cancel_task"]
    assert messages[-1] == {"role": "assistant", "content": report}


def trailing_user_text(messages: list[dict[str, Any]]) -> str:
    """Everything appended since the model last spoke (one event or a batch)."""
    texts: list[str] = []
    for message in reversed(messages):
        if message["role"] != "user":
            break
        texts.insert(0, str(message.get("content") or ""))
    return "\n".join(texts)


def analysis_model(body: dict[str, Any]) -> Reply:
    """The model of scenario 2's second half: start, answer the time, present the result."""
    messages = non_status(body)
    if messages[-1]["role"] == "tool":
        return Reply(text="The analysis is running in the background; I will report back.")
    text = trailing_user_text(messages)
    found = re.search(r"^analysis: (.*)$", text, re.MULTILINE)  # an output line
    if "finished with exit status 0" in text and found:
        return Reply(text=f"The analysis finished: {found.group(1)}.")
    if text.endswith("run the log analysis"):
        command = "while [ ! -e gate ]; do sleep 0.05; done; echo 'analysis: 3 anomalies found'"
        return Reply(tool_calls=[ToolCallSpec("start_shell", {"command": command})])
    if "[Handled in parallel" in text:
        return Reply(text="Noted.")
    if "what time is it?" in text:
        return Reply(text="It is 10:00 UTC.")
    return Reply(text="(unexpected)")


async def test_long_command_result_presented_when_done(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Scenario 2: a question is answered while start_shell runs; its analysis comes at the end."""
    model_server.responder = analysis_model
    gate = tmp_path / "workspace" / "gate"
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        async with watch_feed(h) as feed:
            await h.send("run the log analysis")
            await feed.wait_for(lambda i: "running in the background" in str(i.get("text")))
            await h.send("what time is it?")
            await feed.wait_for(lambda i: i.get("text") == "It is 10:00 UTC.")
            status = (await h.client.get("/api/status")).json()
            await anyio.Path(gate).touch()
            await feed.wait_for(
                lambda i: i.get("text") == "The analysis finished: 3 anomalies found."
            )
        messages = await h.trajectory()
    [task] = [t for t in status["sessions"]["main"]["tasks"] if t.get("kind") == "shell"]
    assert task["kind"] == "shell" and task["state"] == "running"  # still ran during the question
    texts = [str(m.get("content") or "") for m in messages]
    asked = next(i for i, t in enumerate(texts) if "what time is it?" in t)
    exited = next(i for i, t in enumerate(texts) if "Background command on shell:" in t)
    assert asked <= exited and "exited" in texts[exited]
    assert "finished with exit status 0" in texts[exited]
    assert "analysis: 3 anomalies found" in texts[exited]
    assert messages[-1] == {
        "role": "assistant",
        "content": "The analysis finished: 3 anomalies found.",
    }


async def test_daemon_stop_stops_running_tasks(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Stopping the daemon stops a running task's whole group and records it as cancelled."""
    marker = f"wakeful-stop-{uuid.uuid4().hex}"
    command = f"(sleep 600; echo {marker}) & sleep 600; echo {marker}"
    model_server.push(Reply(tool_calls=[ToolCallSpec("start_shell", {"command": command})]))
    model_server.responder = lambda _body: Reply(text="Started.")
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        async with watch_feed(h) as feed:
            await h.send("start the job")
            await feed.wait_for(lambda i: i.get("text") == "Started.")
        assert len(live_processes_with(marker)) >= 2  # the command and its background child
    assert live_processes_with(marker) == []
    [record_file] = [p async for p in anyio.Path(tmp_path / "tasks").glob("*.json")]
    record = json.loads(await record_file.read_text())
    assert (record["state"], record["reason"], record["reported"]) == (
        "cancelled",
        "the daemon stopped",
        False,  # reported to the session by the next start
    )
