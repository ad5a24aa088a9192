"""`wakeful status` as a person reads it, most wanted first: is the daemon up, the model,
the sessions, what waits for the owner, the events and the store; then every other part
in a line of its own. A field is left out only when it says nothing (an empty list);
`--all` prints every field as a tree and `--json` the daemon's answer as it is."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterator
from typing import Any

from wakeful.cli.status import compact_safety, compact_status

MAX_SESSIONS = 12
# Shown in the order of this list, each in its own way; every other key gets a line.
FIRST = (
    "stopping",
    "model",
    "sessions",
    "safety",
    "events_accepted",
    "duplicates_dropped",
    "quarantined",
    "store",
    "components",
)
FOOTER = "(`wakeful status --all`: every field; `--json`: as the daemon says it)"


def status_lines(status: dict[str, Any], width: int = 80) -> list[str]:
    """The status in lines no wider than ``width`` (a longer one goes on below, indented)."""
    return [row for line in _lines(status) for row in wrapped(line, width)]


def wrapped(line: str, width: int) -> list[str]:
    """``line`` broken at spaces (never inside a word, a path or a URL) to ``width``, the
    rows after the first indented deeper. Not :func:`wakeful.cli.wrap.wrap`, the chat's:
    that one cuts a word wider than a row, and a path cut in two cannot be copied."""
    if len(line) <= width:
        return [line]
    pad = " " * (len(line) - len(line.lstrip()) + 4)
    # The line's own indent stays on its first row (textwrap keeps leading space).
    rows = textwrap.wrap(
        line, width, subsequent_indent=pad, break_long_words=False, break_on_hyphens=False
    )
    return rows or [line]


def _lines(status: dict[str, Any]) -> list[str]:
    shown = compact_status(status)
    lines = [_headline(shown)]
    lines += _model_lines(shown.get("model"))
    lines += _session_lines(shown.get("sessions"))
    lines += _owner_lines(status.get("safety"))
    lines += _event_lines(shown)
    lines += _store_lines(shown.get("store"))
    lines += _component_lines(shown.get("components"))
    for key, value in shown.items():
        if key not in FIRST:
            lines += section_lines(key, value)
    lines.append(FOOTER)
    return lines


def tree_lines(value: Any, indent: int = 0) -> Iterator[str]:
    """Every field, nested by indentation (`wakeful status --all`)."""
    pad = "  " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                yield f"{pad}{key}:"
                yield from tree_lines(item, indent + 1)
            else:
                yield f"{pad}{key}: {scalar(item)}"
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                yield f"{pad}-"
                yield from tree_lines(item, indent + 1)
            else:
                yield f"{pad}- {scalar(item)}"
    else:
        yield f"{pad}{scalar(value)}"


def scalar(value: Any) -> str:
    if value is None or value == {} or value == []:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def section_lines(key: str, value: Any) -> list[str]:
    """``name: field value, field value`` — nested fields of plain values in brackets,
    lists and deeper fields on the indented lines below."""
    if not isinstance(value, dict):
        if isinstance(value, list) and value:
            return [f"{key}:", *tree_lines(value, 1)]
        return [f"{key}: {scalar(value)}"]
    inline: list[str] = []
    below: list[str] = []
    for field, item in value.items():
        if isinstance(item, dict) and item and all(_plain(v) for v in item.values()):
            inline.append(f"{field} ({', '.join(f'{k} {scalar(v)}' for k, v in item.items())})")
        elif isinstance(item, dict | list) and item:
            below += [f"  {field}:", *tree_lines(item, 2)]
        elif item not in ([], {}, None):
            inline.append(f"{field} {scalar(item)}")
    return [f"{key}: {', '.join(inline) or '-'}", *below]


def _plain(value: Any) -> bool:
    return not isinstance(value, dict | list) or not value


def _headline(shown: dict[str, Any]) -> str:
    state = "stopping" if shown.get("stopping") else "running"
    parts = shown.get("components")
    broken = sorted(
        name
        for name, part in (parts.items() if isinstance(parts, dict) else ())
        if isinstance(part, dict) and part.get("ok") is False
    )
    store = shown.get("store")
    if isinstance(store, dict) and store.get("ok") is False:
        broken.insert(0, "store")
    return f"wakeful: {state}" + (f"; not ok: {', '.join(broken)}" if broken else "")


def _model_lines(model: Any) -> list[str]:
    if not isinstance(model, dict):
        return [f"model: {scalar(model)}"]
    if model.get("configured") is False:
        return ["model: not configured (see below)"]
    what = model.get("description") or model.get("model") or "configured"
    health = model.get("health")
    if not isinstance(health, dict):
        return [f"model: {what}"]
    state = health.get("state", "?")
    details = {k: v for k, v in health.items() if k != "state" and v not in (None, "")}
    # The health on a line of its own: with the endpoint beside it, one line would not
    # fit an 80-column terminal.
    if state == "ok":
        since = f", last success {details['last_success']}" if "last_success" in details else ""
        return [f"model: {what}", f"  health: ok{since}"]
    return [
        f"model: {what}",
        f"  health: {state}",
        *(f"  {k}: {scalar(v)}" for k, v in details.items()),
    ]


def _session_lines(sessions: Any) -> list[str]:
    if not isinstance(sessions, dict) or not sessions:
        return ["sessions: none yet"]

    def urgency(item: tuple[str, Any]) -> tuple[int, int, str]:
        info = item[1] if isinstance(item[1], dict) else {}
        return (not info.get("busy"), -int(info.get("pending") or 0), item[0])

    ordered = sorted(sessions.items(), key=urgency)
    busy = sum(1 for _, info in ordered if isinstance(info, dict) and info.get("busy"))
    lines = [f"sessions: {len(ordered)}" + (f", {busy} busy" if busy else "")]
    for name, info in ordered[:MAX_SESSIONS]:
        lines += _one_session(name, info)
    hidden = len(ordered) - MAX_SESSIONS
    if hidden > 0:
        lines.append(f"  (+{hidden} more idle: `wakeful status --all` lists them)")
    return lines


def _one_session(name: str, info: Any) -> list[str]:
    if not isinstance(info, dict):
        return [f"  {name}: {scalar(info)}"]
    fields = ["busy" if info.get("busy") else "idle"]
    pending = info.get("pending") or 0
    if pending:
        fields.append(f"{pending} waiting" + _for_how_long(info.get("oldest_pending_at")))
    if info.get("context"):
        fields.append(f"context {info['context']}")
    skip = {"busy", "pending", "oldest_pending_at", "context", "tasks", "plan"}
    fields += [f"{k} {scalar(v)}" for k, v in info.items() if k not in skip and _plain(v)]
    lines = [f"  {name}: {', '.join(fields)}"]
    lines += [f"    - {task}" for task in info.get("tasks") or []]
    plan = info.get("plan")
    if isinstance(plan, list) and plan:
        lines += ["    plan:", *(f"      {step}" for step in plan)]
    return lines


def _for_how_long(since: Any) -> str:
    """`` for 3 min`` since a Unix time; nothing without one."""
    if not isinstance(since, int | float) or isinstance(since, bool):
        return ""
    seconds = max(0, int(time.time() - since))
    if seconds < 120:
        return f" for {seconds} s"
    if seconds < 7200:
        return f" for {seconds // 60} min"
    return f" for {seconds // 3600} h"


def _owner_lines(safety: Any) -> list[str]:
    """From the daemon's own figures (not the --all tree's sentences about them)."""
    if not isinstance(safety, dict):
        return []
    pending = safety.get("pending_approvals") or 0
    lines = []
    if pending:
        plural = "" if pending == 1 else "s"
        lines.append(f"  - {pending} approval{plural} waiting (`wakeful approvals` lists them)")
    shown = compact_safety(safety)
    lines += [f"  - tainted {line}" for line in shown["tainted sessions"]]
    lines += [f"  - tripped breaker {line}" for line in shown["tripped breakers"]]
    if not lines:
        return ["needs you: nothing (no approval waiting, no session tainted, no breaker tripped)"]
    return ["needs you:", *lines]


def _event_lines(shown: dict[str, Any]) -> list[str]:
    quarantined = [q for q in shown.get("quarantined") or [] if isinstance(q, dict)]
    line = (
        f"events: {shown.get('events_accepted', 0)} accepted,"
        f" {shown.get('duplicates_dropped', 0)} duplicates dropped,"
        f" {len(quarantined)} quarantined"
    )
    held = [
        f"  - {q.get('id')} ({q.get('session')}, {q.get('kind')}):"
        f" {q.get('failure') or q.get('reason')} (`wakeful events retry {q.get('id')}`)"
        for q in quarantined
    ]
    return [line, *held]


def _store_lines(store: Any) -> list[str]:
    if not isinstance(store, dict):
        return [] if store is None else [f"store: {scalar(store)}"]
    state = "ok" if store.get("ok") else "NOT OK"
    return [f"store: {state}, {store.get('detail', '')}".rstrip(", ")]


def _component_lines(parts: Any) -> list[str]:
    if not isinstance(parts, dict) or not parts:
        return []
    ok = [name for name, part in parts.items() if isinstance(part, dict) and part.get("ok")]
    line = "parts: " + (", ".join(f"{name} ok" for name in ok) or "none ok")
    broken = [
        f"  - {name}: NOT OK, {part.get('detail')}"
        + (" (required: the daemon is not ready)" if part.get("required") else "")
        for name, part in parts.items()
        if isinstance(part, dict) and not part.get("ok")
    ]
    return [line, *broken]
