"""The GitHub preset: common events as one line the agent can read at a glance.

Each summary is built from the fields GitHub documents for that event; the
key fields also go into the event's ``content.data`` so tools can use them
without the whole (often 20 KB) payload.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wakeful.sources.webhook.mapping import display, is_missing, lookup

Fields = dict[str, Any]


def _get(payload: Any, path: str) -> Any:
    value = lookup(payload, path)
    return None if is_missing(value) else value


def _text(payload: Any, path: str) -> str:
    return display(lookup(payload, path))


def _ref_name(ref: str) -> str:
    for prefix, label in (("refs/heads/", "branch "), ("refs/tags/", "tag ")):
        if ref.startswith(prefix):
            return label + ref.removeprefix(prefix)
    return ref


def _first_line(text: Any) -> str:
    return str(text).strip().splitlines()[0] if isinstance(text, str) and text.strip() else ""


def push(p: Any) -> tuple[str, Fields]:
    ref = _ref_name(_text(p, "ref"))
    repo, who = _text(p, "repository.full_name"), _text(p, "pusher.name")
    commits = _get(p, "commits") or []
    head = _first_line(_get(p, "head_commit.message"))
    fields = {
        "repository": _get(p, "repository.full_name"),
        "ref": _get(p, "ref"),
        "after": _get(p, "after"),
        "commits": len(commits),
        "head_commit": head,
        "url": _get(p, "compare"),
    }
    if _get(p, "deleted"):
        return f"{who} deleted {ref} in {repo}", fields
    noun = "commit" if len(commits) == 1 else "commits"
    forced = " (force-push)" if _get(p, "forced") else ""
    line = f"{who} pushed {len(commits)} {noun} to {ref} in {repo}{forced}"
    return (f"{line}: {head}" if head else line), fields


def pull_request(p: Any) -> tuple[str, Fields]:
    action = str(_get(p, "action") or "updated")
    if action == "closed" and _get(p, "pull_request.merged"):
        action = "merged"
    number, repo = _text(p, "number"), _text(p, "repository.full_name")
    title, who = _text(p, "pull_request.title"), _text(p, "sender.login")
    fields = {
        "repository": _get(p, "repository.full_name"),
        "number": _get(p, "number"),
        "action": action,
        "title": _get(p, "pull_request.title"),
        "head": _get(p, "pull_request.head.ref"),
        "base": _get(p, "pull_request.base.ref"),
        "url": _get(p, "pull_request.html_url"),
    }
    return f"Pull request #{number} {action} by {who} in {repo}: {title}", fields


def issues(p: Any) -> tuple[str, Fields]:
    action, repo = _text(p, "action"), _text(p, "repository.full_name")
    number, title, who = _text(p, "issue.number"), _text(p, "issue.title"), _text(p, "sender.login")
    labels = [item.get("name") for item in _get(p, "issue.labels") or [] if isinstance(item, dict)]
    fields = {
        "repository": _get(p, "repository.full_name"),
        "number": _get(p, "issue.number"),
        "action": _get(p, "action"),
        "title": _get(p, "issue.title"),
        "labels": labels,
        "url": _get(p, "issue.html_url"),
    }
    return f"Issue #{number} {action} by {who} in {repo}: {title}", fields


def _outcome(p: Any, obj: str) -> str:
    return str(_get(p, f"{obj}.conclusion") or _get(p, f"{obj}.status") or "unknown")


def check_run(p: Any) -> tuple[str, Fields]:
    name, repo = _text(p, "check_run.name"), _text(p, "repository.full_name")
    sha = str(_get(p, "check_run.head_sha") or "")[:7]
    outcome = _outcome(p, "check_run")
    fields = {
        "repository": _get(p, "repository.full_name"),
        "name": _get(p, "check_run.name"),
        "action": _get(p, "action"),
        "status": _get(p, "check_run.status"),
        "conclusion": _get(p, "check_run.conclusion"),
        "head_sha": _get(p, "check_run.head_sha"),
        "url": _get(p, "check_run.html_url"),
    }
    return f"Check run '{name}' {_text(p, 'action')}: {outcome} at {sha} in {repo}", fields


def _workflow_name(p: Any) -> str:
    """The run's name; GitHub sends it empty for some runs, naming the workflow elsewhere."""
    for path in ("workflow_run.name", "workflow.name", "workflow_run.display_title"):
        value = _get(p, path)
        if isinstance(value, str) and value.strip():
            return value.strip()
    workflow_file = _get(p, "workflow_run.path") or _get(p, "workflow.path")
    return str(workflow_file).rsplit("/", 1)[-1] if workflow_file else "(unnamed workflow)"


def workflow_run(p: Any) -> tuple[str, Fields]:
    name, repo = _workflow_name(p), _text(p, "repository.full_name")
    number, branch = _text(p, "workflow_run.run_number"), _text(p, "workflow_run.head_branch")
    outcome = _outcome(p, "workflow_run")
    fields = {
        "repository": _get(p, "repository.full_name"),
        "workflow": name,
        "run_number": _get(p, "workflow_run.run_number"),
        "action": _get(p, "action"),
        "status": _get(p, "workflow_run.status"),
        "conclusion": _get(p, "workflow_run.conclusion"),
        "branch": _get(p, "workflow_run.head_branch"),
        "url": _get(p, "workflow_run.html_url"),
    }
    line = f"Workflow '{name}' run #{number} {_text(p, 'action')}: {outcome} on {branch} in {repo}"
    return line, fields


def ping(p: Any) -> tuple[str, Fields]:
    fields = {"hook_id": _get(p, "hook_id"), "zen": _get(p, "zen")}
    return f"GitHub ping for webhook {_text(p, 'hook_id')}: {_text(p, 'zen')}", fields


SUMMARIES: dict[str, Callable[[Any], tuple[str, Fields]]] = {
    "push": push,
    "pull_request": pull_request,
    "issues": issues,
    "check_run": check_run,
    "workflow_run": workflow_run,
    "ping": ping,
}


def summarize(kind: str | None, payload: Any) -> tuple[str, Fields]:
    """One line plus key fields for a GitHub delivery of event type ``kind``."""
    summary = SUMMARIES.get(kind or "")
    if summary is not None:
        return summary(payload)
    action = _get(payload, "action")
    what = f"{kind or 'unknown'} ({action})" if isinstance(action, str) else (kind or "unknown")
    repo = _get(payload, "repository.full_name")
    fields = {"repository": repo, "action": action, "sender": _get(payload, "sender.login")}
    where = f" in {repo}" if repo else ""
    return f"GitHub {what} event{where} by {_text(payload, 'sender.login')}", fields


# What only the named event's payload carries, checked most specific first. The
# X-GitHub-Event header is not covered by the signature; the body is, so where the
# body says what it is, that wins over the header.
_SHAPES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # (event type, keys it must have, keys that mean some other event)
    ("ping", ("zen", "hook_id"), ()),
    ("workflow_run", ("workflow_run", "workflow"), ("deployment",)),
    ("check_run", ("check_run",), ("deployment_status",)),
    ("push", ("ref", "commits", "pusher"), ()),
    ("pull_request", ("pull_request", "number"), ("review", "comment", "thread")),
    ("issues", ("issue",), ("comment", "changes_for_comment")),
)
SHAPED_TYPES = frozenset(kind for kind, _, _ in _SHAPES)


def _shape(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    for kind, required, excluded in _SHAPES:
        if all(k in payload for k in required) and not any(k in payload for k in excluded):
            return kind
    return None


def event_type(header: str | None, payload: Any) -> str | None:
    """The event type: the signed payload's shape where it has one of ours, else the
    header, except that a header naming one of those shapes on a payload without it
    is not believed (None: shown as an unknown event, matched by no ``events`` filter)."""
    shaped = _shape(payload)
    if shaped is not None:
        return shaped
    if header in SHAPED_TYPES:
        return None
    return header
