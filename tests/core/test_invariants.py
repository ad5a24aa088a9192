"""Property: whatever mix of messages, stops, corrections, quick questions and
routine events arrives while the model talks, calls tools, fails or is held
mid-call, every accepted event reaches the model exactly once and every request
is a valid trajectory (SPEC §4, §5). The core tier's cousin of
tests/test_interleavings.py: no daemon, so each example takes milliseconds."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Core, Step, build_core, calls, fails, reply, tool_call
from tests.trajectory_validator import validate_openai
from wakeful.core.provider import ModelUnavailable
from wakeful.kernel.events import Event, new_event_id
from wakeful.store.base import EventStatus

# What the model does on its next scripted call (later calls: a plain "ok").
REPLIES = ("text", "held", "echo", "explode", "block", "error")
# What arrives next: each sent event carries a token the checks look for.
# "midway": until a model call or a tool is in flight (or nothing more will run), so
# what follows meets a busy loop.
ACTIONS = (
    "message",
    "stop",
    "wait",
    "interrupt",
    "quick",
    "routine",
    "midway",
    "release",
    "settle",
)


def scripted(kind: str, n: int) -> Step:
    match kind:
        case "held":
            return reply(f"R{n} held reply", hold=True)
        case "echo":
            return calls(tool_call("echo", {"text": f"R{n}"}))
        case "explode":
            return calls(tool_call("explode", {"text": f"R{n}"}))
        case "block":
            return calls(tool_call("block", {"label": f"R{n}"}))
        case "error":
            return fails(ModelUnavailable(f"R{n} endpoint down"))
        case _:
            return reply(f"R{n} done")


def routine_event(text: str) -> Event:
    return Event.parse(
        {
            "id": new_event_id("hook"),
            "kind": "webhook.received",
            "source": {"type": "webhook", "principal": "ci"},
            "channel": "webhook:ci",
            "content": {"text": text},
        }
    )


def in_flight(core: Core) -> bool:
    """A held model call or a blocked tool is under way, or the loop rests (nothing is
    coming that could be: waiting longer would wait for ever)."""
    held = any(s.hold is not None and not s.hold.is_set() for s in core.provider.steps)
    block = core.tools.block
    tool = len(block.started) > len(block.finished) + len(block.cancelled)
    return held or tool or core.loop().at_rest


def release_everything(core: Core) -> None:
    for step in [*core.provider.steps, *core.provider.unused]:
        if step.hold is not None:
            step.release()
    core.tools.block.release.set()


async def perform(core: Core, action: str, token: str) -> str | None:
    """Do ``action``; the token it sent, if it sent an event."""
    match action:
        case "message":
            await core.send(f"{token} please note this")
        case "stop":
            await core.send(f"{token} stop")
        case "wait":
            await core.send(f"wait, {token} change of plan")
        case "interrupt":
            await core.send(f"{token} stop", kind="user.interrupt")
        case "quick":
            await core.send(f"what time is it? {token}")
        case "routine":
            await core.submit(routine_event(f"{token} build finished"))
        case "midway":
            await core.until(lambda: in_flight(core), "a step in flight")
            return None
        case "release":
            release_everything(core)
            return None
        case _:
            release_everything(core)
            await core.settled()
            return None
    return token


def mentions(message: dict[str, Any], token: str) -> bool:
    """A user-role turn that carries the token (a placeholder may quote the event that
    interrupted its call: that names the event, it does not deliver it)."""
    content = str(message.get("content") or "")
    return message["role"] == "user" and re.search(rf"\b{token}\b", content) is not None


async def scenario(data_dir: Path, replies: list[str], actions: list[str]) -> None:
    async with build_core(data_dir, default_reply="ok") as core:
        core.provider.script(*(scripted(kind, n) for n, kind in enumerate(replies)))
        sent = [
            token
            for n, action in enumerate(actions)
            if (token := await perform(core, action, f"M{n:03d}")) is not None
        ]
        release_everything(core)
        await core.settled()
        messages = await core.trajectory()
        requests = core.provider.requests
        events = await core.store.event_log("main", limit=10_000)
    if messages:  # no event sent (only releases): nothing to check
        validate_openai(messages)
    for request in requests:
        validate_openai(request.messages)
    assert all(stored.status is EventStatus.CONSUMED for stored in events)
    for token in sent:
        # In the trajectory exactly once, as the user's (or a source's) turn.
        hits = [m for m in messages if mentions(m, token)]
        assert len(hits) == 1, f"{token}: {hits}"
        # Seen by a model (the session's, or the side session that answered it), and
        # never twice in one request.
        seen = [sum(mentions(m, token) for m in r.messages) for r in requests]
        assert any(seen), f"{token} reached no model request"
        assert max(seen) == 1, f"{token} twice in one request"
    # Every call answered once; every promised late result arrived once.
    call_ids = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(call_ids) == sorted(results)
    for message in messages:
        if message["role"] == "tool" and "will arrive later" in str(message["content"]):
            call = message["tool_call_id"]
            late = [
                m for m in messages if "Late result" in str(m["content"]) and call in m["content"]
            ]
            assert len(late) == 1, f"late result for {call}: {len(late)}"


examples = itertools.count()


@settings(
    # Small: the tier stays fast. WAKEFUL_CORE_EXAMPLES=500 for a longer hunt.
    max_examples=int(os.environ.get("WAKEFUL_CORE_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    replies=st.lists(st.sampled_from(REPLIES), max_size=6),
    actions=st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=8),
)
def test_every_accepted_event_reaches_the_model_exactly_once(
    tmp_path: Path, replies: list[str], actions: list[str]
) -> None:
    data_dir = tmp_path / f"example-{next(examples)}"  # a fresh store per example
    data_dir.mkdir()
    anyio.run(scenario, data_dir, replies, actions)


@pytest.mark.parametrize(
    ("replies", "actions"),
    [
        # A stop while a tool runs, a question while the model is held: both paths at once.
        (["block", "held"], ["message", "midway", "stop", "midway", "quick", "release"]),
        (["held", "error", "error", "error"], ["message", "midway", "routine", "wait", "settle"]),
        (["block"], ["message", "midway", "wait", "message", "release"]),
        (["echo", "held"], ["message", "midway", "quick", "quick", "interrupt", "settle"]),
    ],
)
def test_known_interleavings(tmp_path: Path, replies: list[str], actions: list[str]) -> None:
    anyio.run(scenario, tmp_path, replies, actions)
