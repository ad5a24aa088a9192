"""Approvals in a fleet: an approval filed by the daemon that owns its session can be
decided through any daemon, and the owner carries the decision out, once.

Two real daemons on one Redis prefix. The owner's model asks the owner a question
(request_human_approval); the decision is posted to the other daemon's HTTP API.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.daemon_harness import ADMIN_TOKEN
from tests.fakes.model_replies import Reply, ToolCallSpec, text_reply
from tests.fleet_daemons import Member, running_fleet, send
from tests.redis_server import REDIS_URL
from tests.test_fleet_daemons import owner_of, times_in, wait_until
from wakeful.core.approvals import Approval, Approvals, DecideOutcome
from wakeful.kernel.events import Event
from wakeful.store.fleet.sessions import FleetOptions
from wakeful.store.redis_store import RedisStore


def approvals(member: Member, everything: bool = False) -> list[dict[str, Any]]:
    with member.process.client() as client:
        response = client.get("/api/approvals" + ("?all=1" if everything else ""))
    response.raise_for_status()
    found: list[dict[str, Any]] = response.json()
    return found


def decide(member: Member, identifier: str, decision: str) -> httpx.Response:
    return httpx.post(
        f"{member.url}/api/approvals/{identifier}",
        json={"decision": decision, "reason": "fine by me"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=10,
    )


def test_a_decision_on_another_daemon_reaches_the_owner(tmp_path: Path, redis_prefix: str) -> None:
    with running_fleet(tmp_path, redis_prefix, n=2) as fleet:
        send(fleet.members[0].url, "s1", "[s1] hello")
        wait_until(lambda: times_in(fleet, "s1", "[s1] hello") == 1, 15, "the first message")
        owner = owner_of(fleet, "s1")
        other = next(m for m in fleet.members if m is not owner)
        # The message is in the trajectory before its model request is made: on a loaded
        # machine that request would take the replies pushed below (and the urgent
        # message after would cut the approval's tool call off). Its answer first.
        owner.model.wait_for_completion(0, timeout_s=15)
        approvals(other)  # the other daemon has read the records once before the filing
        question = {"question": "[s1] may I cancel the meeting?"}
        owner.model.push(
            Reply(tool_calls=[ToolCallSpec("request_human_approval", question)]),
            text_reply("[s1] asked the owner"),
            text_reply("[s1] cancelling it now"),
        )
        send(other.url, "s1", "[s1] please cancel the meeting")
        wait_until(lambda: approvals(other) != [], 15, "the approval listed on the other daemon")
        [approval] = approvals(other)
        assert approval["session"] == "s1" and approval["kind"] == "question"

        answer = decide(other, approval["id"], "approve")
        assert answer.status_code == 200, answer.text
        wait_until(
            lambda: times_in(fleet, "s1", "The owner approved it") == 1,
            15,
            "the decision in the owner's trajectory",
        )
        wait_until(
            lambda: times_in(fleet, "s1", "cancelling it now") == 1, 15, "the owner answering"
        )
        assert approvals(owner) == [] and approvals(other) == []  # both see it decided
        again = decide(owner, approval["id"], "deny")  # the first decision stands, anywhere
        assert again.status_code == 409, again.text
        [decided] = approvals(owner, everything=True)
        assert decided["decision"] == "approve" and decided["decided_reason"] == "fine by me"
        trajectory = json.dumps(fleet.trajectory("s1"))
        assert trajectory.count("The owner approved it") == 1
        assert "timed out" not in trajectory and "denied" not in trajectory
        # Carried out by the owner only: the other daemon's model never saw the session.
        assert not any("[s1]" in json.dumps(r.body) for r in other.model.requests)


def test_two_decisions_at_once_on_two_daemons_one_stands(tmp_path: Path, redis_prefix: str) -> None:
    """Approve through one daemon and deny through the other at the same instant: the
    store's compare-and-set lets exactly one through (200), the other is told 409, and
    both daemons and the trajectory show the one that stood."""
    with running_fleet(tmp_path, redis_prefix, n=2) as fleet:
        send(fleet.members[0].url, "s2", "[s2] hello")
        wait_until(lambda: times_in(fleet, "s2", "[s2] hello") == 1, 15, "the first message")
        owner = owner_of(fleet, "s2")
        other = next(m for m in fleet.members if m is not owner)
        # Its answer first: on a loaded machine the model request for "hello" could
        # otherwise come after the push below and take the replies pushed for the next.
        owner.model.wait_for_completion(0, timeout_s=15)
        question = {"question": "[s2] may I send the invoice?"}
        owner.model.push(
            Reply(tool_calls=[ToolCallSpec("request_human_approval", question)]),
            text_reply("[s2] asked the owner"),
            text_reply("[s2] done deciding"),
        )
        send(owner.url, "s2", "[s2] please send the invoice")
        wait_until(lambda: approvals(other) != [], 15, "the approval listed")
        [approval] = approvals(other)
        start = threading.Barrier(2)
        answers: dict[str, httpx.Response] = {}

        def post(member: Member, decision: str) -> None:
            start.wait(timeout=10)
            answers[decision] = decide(member, approval["id"], decision)

        threads = [
            threading.Thread(target=post, args=(owner, "approve")),
            threading.Thread(target=post, args=(other, "deny")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
        codes = sorted(answer.status_code for answer in answers.values())
        assert codes == [200, 409], {d: (a.status_code, a.text) for d, a in answers.items()}
        [winner] = [d for d, a in answers.items() if a.status_code == 200]
        [decided] = approvals(owner, everything=True)
        assert decided["decision"] == winner
        assert approvals(other, everything=True)[0]["decision"] == winner
        verb = "approved" if winner == "approve" else "denied"
        wait_until(
            lambda: times_in(fleet, "s2", f"The owner {verb} it") == 1,
            15,
            "the standing decision in the owner's trajectory",
        )
        loser = "denied" if winner == "approve" else "approved"
        assert f"The owner {loser} it" not in json.dumps(fleet.trajectory("s2"))


class _OwnsNothing:
    """Effects of a daemon that drives none of the sessions: never asked to act."""

    async def submit(self, event: Event) -> object:
        raise AssertionError("a daemon that owns no session submitted an event")

    async def run_approved(self, approval: Approval) -> str:
        raise AssertionError("a daemon that owns no session ran an approved call")

    async def announce(self, approval: Approval) -> None:
        raise AssertionError("a daemon that owns no session announced an approval")

    def owns(self, session: str) -> bool:
        return False


@pytest.mark.anyio
async def test_decisions_racing_through_two_stores_one_stands(redis_prefix: str) -> None:
    """The same race without the HTTP in between, many times: two daemons' Approvals on
    one Redis prefix decide the same approval at once (their reads and writes
    interleave); each time exactly one decision is taken, and it is the stored one."""
    stores = [
        await RedisStore(REDIS_URL, prefix=redis_prefix, fleet=FleetOptions()).open()
        for _ in range(2)
    ]
    try:
        # Neither carries it out: neither owns the session.
        first, second = (
            Approvals(store, timeout_s=900, effects=_OwnsNothing(), shared=True) for store in stores
        )
        for round_ in range(20):
            filed = await first.request(
                session="s3", call_id=f"call_{round_}", tool="shell_exec",
                arguments="{}", reason="the session read a webhook", tainted_by=None,
            )  # fmt: skip
            outcomes: dict[str, DecideOutcome] = {}

            async with anyio.create_task_group() as group:
                group.start_soon(_take, first, filed.id, "approve", outcomes)
                group.start_soon(_take, second, filed.id, "deny", outcomes)
            taken = [d for d, o in outcomes.items() if o is DecideOutcome.DECIDED]
            assert len(taken) == 1, outcomes
            assert set(outcomes.values()) == {DecideOutcome.DECIDED, DecideOutcome.ALREADY}
            for daemon in (first, second):
                stored = await daemon.get(filed.id)
                assert stored is not None and stored.decision == taken[0]
    finally:
        for store in stores:
            await store.aclose()


async def _take(
    daemon: Approvals, identifier: str, decision: str, outcomes: dict[str, DecideOutcome]
) -> None:
    outcomes[decision] = (await daemon.decide(identifier, decision))[0]
