"""Approvals in a fleet: an approval filed by the daemon that owns its session can be
decided through any daemon, and the owner carries the decision out, once.

Two real daemons on one Redis prefix. The owner's model asks the owner a question
(request_human_approval); the decision is posted to the other daemon's HTTP API.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.daemon_harness import ADMIN_TOKEN
from tests.fakes.model_replies import Reply, ToolCallSpec, text_reply
from tests.fleet_daemons import Member, running_fleet, send
from tests.test_fleet_daemons import owner_of, times_in, wait_until


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
