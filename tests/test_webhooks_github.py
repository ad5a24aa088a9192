"""The GitHub preset: each supported event type becomes one readable line plus key fields."""

from __future__ import annotations

from typing import Any

import pytest

from wakeful.sources.webhook.github import summarize

REPO = {"full_name": "acme/rocket"}
SENDER = {"login": "octocat"}

CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    (
        "push",
        {
            "ref": "refs/heads/main",
            "after": "abc123",
            "compare": "https://github.com/acme/rocket/compare/x...y",
            "repository": REPO,
            "pusher": {"name": "octocat"},
            "commits": [{"id": "1"}, {"id": "2"}],
            "head_commit": {"message": "Fix the launch countdown\n\nLong body"},
        },
        "octocat pushed 2 commits to branch main in acme/rocket: Fix the launch countdown",
        {"commits": 2, "ref": "refs/heads/main"},
    ),
    (
        "pull_request",
        {
            "action": "closed",
            "number": 42,
            "repository": REPO,
            "sender": SENDER,
            "pull_request": {
                "title": "Add boosters",
                "merged": True,
                "html_url": "https://github.com/acme/rocket/pull/42",
                "head": {"ref": "boosters"},
                "base": {"ref": "main"},
            },
        },
        "Pull request #42 merged by octocat in acme/rocket: Add boosters",
        {"number": 42, "action": "merged", "base": "main"},
    ),
    (
        "issues",
        {
            "action": "opened",
            "repository": REPO,
            "sender": SENDER,
            "issue": {"number": 7, "title": "Fuel leak", "labels": [{"name": "bug"}]},
        },
        "Issue #7 opened by octocat in acme/rocket: Fuel leak",
        {"labels": ["bug"], "number": 7},
    ),
    (
        "check_run",
        {
            "action": "completed",
            "repository": REPO,
            "check_run": {
                "name": "tests",
                "status": "completed",
                "conclusion": "failure",
                "head_sha": "0123456789abcdef",
            },
        },
        "Check run 'tests' completed: failure at 0123456 in acme/rocket",
        {"conclusion": "failure", "name": "tests"},
    ),
    (
        "workflow_run",
        {
            "action": "completed",
            "repository": REPO,
            "workflow_run": {
                "name": "CI",
                "run_number": 311,
                "status": "completed",
                "conclusion": "success",
                "head_branch": "main",
            },
        },
        "Workflow 'CI' run #311 completed: success on main in acme/rocket",
        {"run_number": 311, "conclusion": "success"},
    ),
]


@pytest.mark.parametrize(("kind", "payload", "line", "fields"), CASES, ids=[c[0] for c in CASES])
def test_github_preset_summaries(
    kind: str, payload: dict[str, Any], line: str, fields: dict[str, Any]
) -> None:
    """push / pull_request / issues / check_run / workflow_run read as one line with key fields."""
    summary, found = summarize(kind, payload)
    assert summary == line
    assert found["repository"] == "acme/rocket"
    assert fields.items() <= found.items()


def test_github_preset_other_events_and_missing_fields() -> None:
    """Unknown event types and sparse payloads still give a line, never an error."""
    summary, fields = summarize("star", {"action": "created", "repository": REPO, "sender": SENDER})
    assert summary == "GitHub star (created) event in acme/rocket by octocat"
    assert fields["action"] == "created"
    summary, _ = summarize("push", {})
    assert summary == "(missing) pushed 0 commits to (missing) in (missing)"
