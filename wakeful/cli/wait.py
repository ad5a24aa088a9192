"""`wakeful send --wait`: follow the session's feed until the run that took the message ends.

Which replies are the message's: a run answers its batch with replies whose ``answers``
is the batch's newest event, so a reply is ours when it answers our event or one that
arrived after it (batched with ours). Replies to earlier events, and unprompted ones
(no ``answers``), belong to someone else. The wait ends at the first idle after our
event left the queue; a run that ended with a model failure and no reply of ours is
exit 1 with the failure.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from wakeful.cli.client import CliError, DaemonClient

STILL_QUEUED = {"pending", "routing", "parallel"}
FAILURE_PREFIXES = ("model call failed:", "run stopped:")


@dataclass
class AnswerWatch:
    """What the feed has said about our event so far."""

    event_id: str
    batched_after: set[str] = field(default_factory=set)  # events that came after ours
    replies: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # this run's model failures
    _seen_ours: bool = False

    def take(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """Note a feed item; the reply to print, if it is one of ours."""
        kind = item.get("type")
        if kind == "event":
            self._note_event(str(item.get("event_id")))
        elif kind == "run" and item.get("state") == "busy":
            self.failures.clear()
        elif kind == "alert" and str(item.get("text", "")).startswith(FAILURE_PREFIXES):
            self.failures.append(str(item["text"]))
        elif kind == "reply" and self._answers_us(item):
            self.replies.append(item)
            return item
        return None

    def _note_event(self, event_id: str) -> None:
        if event_id == self.event_id:
            self._seen_ours = True
        elif self._seen_ours:
            self.batched_after.add(event_id)

    def _answers_us(self, item: dict[str, Any]) -> bool:
        # No "answers": unprompted (a timer, a task's end), not an answer to a message.
        answers = item.get("answers")
        return answers == self.event_id or answers in self.batched_after

    def reports(self, item: dict[str, Any]) -> bool:
        """True for a model call's failure: :func:`finish` says it, as its last line."""
        text = str(item.get("text", ""))
        return item.get("type") == "alert" and text.startswith(FAILURE_PREFIXES[0])

    def failure(self) -> str | None:
        """Why the run gave no answer, when the model failed."""
        if self.replies or not self.failures:
            return None
        calls = [f for f in self.failures if f.startswith(FAILURE_PREFIXES[0])]
        return (calls or self.failures)[-1]


def answered(client: DaemonClient, session: str, watch: AnswerWatch) -> bool:
    """At a run's end: True when our event is no longer waiting (this run took it)."""
    if watch.replies or watch.failures:
        return True
    path = f"/api/sessions/{client.segment(session)}/events"
    page = client.get_json(path, {"newest": 1, "limit": 200})["events"]
    for entry in page:
        if entry.get("id") == watch.event_id:
            return str(entry.get("status")) not in STILL_QUEUED
    return True  # older than the page: long since handled


def finish(watch: AnswerWatch) -> int:
    reason = watch.failure()
    if reason is not None:
        raise CliError(f"no reply: {reason}")
    if not watch.replies:
        print("(the run ended without a reply to this message)", file=sys.stderr)
    return 0
