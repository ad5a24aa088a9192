"""Property: any interleaving of messages, interrupts, quick questions, tools,
slow streams and restarts keeps every invariant of SPEC §4.

It runs on both providers: the fake OpenAI server and the fake Anthropic
Messages server, which refuses what the real API refuses.

Restarts here are in-process (the daemon's lifespan is exited and entered
again on the same database); SIGKILL crashes are covered by test_restart.py.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.daemon_harness import FeedWatcher, Harness, harness, settings_for, watch_feed
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.core.loop.parallel import SIDE_QUESTION_NOTE

REPLY_KINDS = ("text", "tool_fast", "tool_slow", "slow_text", "two_tools")
ACTIONS = st.one_of(
    st.just(("message",)),
    st.just(("interrupt",)),
    st.just(("quick",)),
    st.just(("restart",)),
    st.tuples(st.just("pause"), st.sampled_from([0.0, 0.05, 0.3])),
)


def make_responder(kinds: list[str]) -> Callable[[dict[str, Any]], Reply]:
    counter = iter(range(10_000))

    def respond(body: dict[str, Any]) -> Reply:
        n = next(counter)
        tag = f"R{n:04d}"
        if SIDE_QUESTION_NOTE in str(body["messages"][-1].get("content")):
            return Reply(text=f"{tag} side answer")
        # Every third reply ends the turn, so a run cannot loop on tool calls forever.
        kind = "text" if n % 3 == 2 else kinds[n % len(kinds)]
        if kind == "tool_fast":
            return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": f"echo {tag}"})])
        if kind == "tool_slow":
            return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": "sleep 0.4"})])
        if kind == "two_tools":
            calls = [ToolCallSpec("shell_exec", {"command": "sleep 0.2"}), ToolCallSpec("get_time")]
            return Reply(tool_calls=calls)
        if kind == "slow_text":
            return Reply(text=f"{tag} " + "slow " * 10, token_delay_s=0.03)
        return Reply(text=f"{tag} done")

    return respond


async def wait_quiescent(h: Harness, feed: FeedWatcher, timeout_s: float = 20.0) -> None:
    """Until no session is busy, nothing is pending and no task runs."""
    with anyio.fail_after(timeout_s):
        while True:
            seen = len(feed.items)
            status = await h.daemon.status()
            quiet = all(
                not s["busy"]
                and s["pending"] == 0
                and not any(t["state"] == "running" for t in s["tasks"])
                for s in status["sessions"].values()
            )
            if quiet:
                return
            await feed.wait_for_more_than(seen, timeout_s)


async def play(
    server: FakeModelServer, data_dir: Path, actions: list[tuple[Any, ...]]
) -> list[str]:
    sent: list[str] = []
    settings_ = settings_for(data_dir, server)
    remaining = list(actions)
    while True:
        async with harness(settings_) as h, watch_feed(h) as feed:
            while remaining:
                action = remaining.pop(0)
                if action[0] == "restart":
                    break
                await perform(h, action, sent)
            else:
                await wait_quiescent(h, feed)
                return sent


async def perform(h: Harness, action: tuple[Any, ...], sent: list[str]) -> None:
    token = f"M{len(sent):03d}"
    if action[0] == "message":
        await h.send(f"{token} please carry on")
    elif action[0] == "interrupt":
        await h.send(f"{token} stop", kind="user.interrupt")
    elif action[0] == "quick":
        await h.send(f"what time is it? {token}")
    else:
        await anyio.sleep(action[1])  # the interleaving itself: time passing between inputs
        return
    sent.append(token)


def check_invariants(
    server: FakeModelServer, messages: list[dict[str, Any]], sent: list[str]
) -> None:
    texts = [str(m.get("content") or "") for m in messages]
    for token in sent:  # every accepted event is in the trajectory exactly once
        hits = [
            t
            for m, t in zip(messages, texts, strict=True)
            if m["role"] == "user" and re.search(rf"\b{token}\b", t)
        ]
        assert len(hits) == 1, f"{token} appears {len(hits)} times"
    for record in server.requests:  # rule 4: an aborted stream never lands
        # By the reply's own tag, not the request's index: a request answered without
        # a reply (its body cut off by a restart) shifts one numbering against the other.
        if record.aborted and record.reply is not None and record.reply.text:
            tag = record.reply.text.split()[0]  # "R0007", as make_responder writes it
            assert not any(
                m["role"] == "assistant" and tag in t for m, t in zip(messages, texts, strict=True)
            )
    calls = [
        c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []
    ]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(calls) == sorted(results) and len(set(results)) == len(results)
    for message in messages:  # a promised late result arrives exactly once
        content = str(message.get("content") or "")
        if message["role"] == "tool" and "will arrive later" in content:
            call = message["tool_call_id"]
            late = [t for t in texts if t.count("Late result from") and f"call {call}" in t]
            assert len(late) == 1, f"late result for {call}: {len(late)}"


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.parametrize("server_class", [FakeModelServer, FakeAnthropicServer])
@settings(
    max_examples=int(os.environ.get("WAKEFUL_PROPERTY_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(
    kinds=st.lists(st.sampled_from(REPLY_KINDS), min_size=1, max_size=5),
    actions=st.lists(ACTIONS, min_size=1, max_size=8),
)
def test_any_interleaving_keeps_the_invariants(
    server_class: type[FakeModelServer], kinds: list[str], actions: list[tuple[Any, ...]]
) -> None:
    """Every request is valid, every event lands once, aborted output never lands,
    and each promised late result arrives exactly once."""
    with server_class() as server, tempfile.TemporaryDirectory() as tmp:
        server.responder = make_responder(kinds)

        async def scenario() -> tuple[list[str], list[dict[str, Any]]]:
            sent = await play(server, Path(tmp), actions)
            async with harness(settings_for(Path(tmp), server)) as h:
                return sent, await h.trajectory()

        sent, messages = anyio.run(scenario)
        assert server.violations == []
        check_invariants(server, messages, sent)
