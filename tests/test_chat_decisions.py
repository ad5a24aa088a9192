"""What counts as a typed approval decision in chat, and what is an ordinary message."""

from __future__ import annotations

import pytest

from wakeful.channels.chat.decisions import DecisionRequest, parse_decision


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("approve k3fwz2qp", DecisionRequest("approve", "k3fwz2qp")),
        ("  Approve K3FWZ2QP \n", DecisionRequest("approve", "k3fwz2qp")),
        ("deny k3fwz2qp", DecisionRequest("deny", "k3fwz2qp")),
        ("DENY k3fwz2qp  too risky ", DecisionRequest("deny", "k3fwz2qp", "too risky")),
        ("deny k3fwz2qp not now,\nmaybe later", DecisionRequest("deny", "k3fwz2qp",
                                                                "not now,\nmaybe later")),
    ],
)  # fmt: skip
def test_a_whole_message_that_is_a_decision(text: str, expected: DecisionRequest) -> None:
    assert parse_decision(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "approve",
        "approve k3fwz2q",  # seven characters
        "approve k3fwz2qpx",  # nine
        "approve k3fwz2q1",  # '1' is not base32
        "approve k3fwz2qp please",  # approve takes no reason: a message for the agent
        "please approve k3fwz2qp",
        "approvek3fwz2qp",
        "deny: k3fwz2qp",
    ],
)
def test_anything_else_is_an_ordinary_message(text: str) -> None:
    assert parse_decision(text) is None


def test_a_long_reason_is_cut_to_what_the_http_api_accepts() -> None:
    found = parse_decision("deny k3fwz2qp " + "x" * 5000)
    assert found is not None and len(found.reason) == 2000
