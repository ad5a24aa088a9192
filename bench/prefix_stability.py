"""Prefix stability and cacheable share over a long session with interruptions.

The whole daemon in-process against the fake OpenAI server, ``--turns`` user
messages (default 200). Every fourth turn the model runs a command with a big
output (so the budget fills and old results get pruned, the history
compacted); every tenth turn the user interrupts a slow command (a
placeholder enters the trajectory, the real result comes later). The context
window is small on purpose (``--window`` tokens) so pruning and compaction
happen within the run.

Printed: requests, how many went over the budget (target 0), how many times
the request's prefix was not a byte-prefix of the next one (at most the prunes
plus the compactions), the cacheable share — the prefix each request shares
with the previous one, as OpenAI's automatic cache would read it (tools then
messages, characters / 4 in 128-token steps from 1,024) — overall and per
call (target ≥ 95 % of input tokens), and the cost of the compactions (the
summary call included; the fake model answers at once, so it is the daemon's share).
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.anthropic_cache import openai_prefix_shares
from bench.common import percentile, quiet_daemon_logs, run_like_the_daemon
from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec, text_reply
from wakeful.core.context.compaction import COMPACTION_PROMPT

BIG = "python3 -c \"[print('row', i, 'x' * 120) for i in range(60)]\""


def is_summary(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == COMPACTION_PROMPT


def respond(body: dict[str, Any]) -> Reply:
    if is_summary(body):
        return text_reply("Summary: the user sent numbered turns; each was noted.")
    last = [m for m in body["messages"] if m["role"] != "system"][-2]
    text = str(last.get("content") or "")
    if last["role"] == "tool":
        return text_reply("Noted.")
    if "slow turn" in text:
        return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": "sleep 30"})])
    if "big turn" in text:
        return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": BIG})])
    return text_reply("Noted, carrying on.")


async def main(turns: int, window: int) -> None:
    quiet_daemon_logs()
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as model:
        model.responder = respond
        model.context_window = window
        context = {"max_tokens": window, "reserve_tokens": 1000, "keep_tool_results": 2}
        settings = daemon_settings(Path(tmp), model.base_url, context=context)
        started = time.perf_counter()
        async with harness(settings) as h:
            for turn in range(turns):
                kind = "slow" if turn % 10 == 9 else "big" if turn % 4 == 3 else "plain"
                async with watch_feed(h) as feed:
                    await h.send(f"{kind} turn {turn}")
                    if kind == "slow":
                        await feed.wait_for(
                            lambda i: i["type"] == "task" and i.get("state") == "started"
                        )
                        await h.send("stop that, it is not needed", kind="user.interrupt")
                    await feed.wait_for(
                        lambda i: i["type"] == "run" and i["state"] == "idle", timeout_s=60
                    )
            status = (await h.client.get("/api/status")).json()["sessions"]["main"]["context"]
        elapsed = time.perf_counter() - started
        assert model.violations == [], model.violations[:3]
    main_requests = [r for r in model.requests if not is_summary(r.body)]
    summaries = [r for r in model.requests if is_summary(r.body)]
    bodies = [r.body for r in main_requests]
    shares, cached, prompt = openai_prefix_shares(bodies)
    breaks = 0
    for before, after in itertools.pairwise(bodies):
        kept = before["messages"][:-1]  # the status bar is last and always new
        if after["messages"][: len(kept)] != kept or after["tools"] != before["tools"]:
            breaks += 1
    print(f"{turns} turns in {elapsed:.0f} s, window {window} tokens (budget {status['budget']})")
    print(f"model requests: {len(main_requests)} (+ {len(summaries)} compaction summaries)")
    print(f"refused as over the window: {len(model.too_long)} (target 0)")
    print(
        f"prefix breaks: {breaks}; prunes {status['prunes']}, compactions {status['compactions']}"
    )
    print(
        f"last compaction took {status.get('last_compaction_ms', '-')} ms, its summary call "
        f"included (the fake model answers at once)"
    )
    print(
        f"cacheable input: {100 * cached / prompt:.1f} % of {prompt} tokens (target >= 95 %); "
        f"per call p50 {100 * percentile(shares[1:], 50):.1f} %, "
        f"min {100 * min(shares[1:]):.1f} %"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=20000)
    args = parser.parse_args()
    run_like_the_daemon(main, args.turns, args.window)
