"""Placeholder tool results: honest, deterministic, written once.

A placeholder stands in for a tool call that has no real result yet so the
trajectory stays valid for model APIs (SPEC §4 rule 3). Its text is a pure
function of its inputs and is persisted when first written, so prompt
caches stay warm and the model never sees it change. It never claims the
call was rejected or failed; it says what is known and what to verify.
"""

from __future__ import annotations

PLACEHOLDER_MARK = "[placeholder]"
LATE_RESULT_PROMISE = "will arrive later as"
# An approval's placeholder is paid by the approvals service, never by the restart's
# late-result check: it is told apart by this phrase, which only it carries.
APPROVAL_WAIT = "it is waiting for the owner's approval"


def promises_late_result(text: str) -> bool:
    """Does this tool message promise that a background task's result comes later as
    an event? (An approval's wait is a promise too, but the approvals service keeps it.)"""
    return (
        text.startswith(PLACEHOLDER_MARK)
        and LATE_RESULT_PROMISE in text
        and APPROVAL_WAIT not in text
    )


def awaits_approval(text: str) -> bool:
    """Is this tool message an approval's placeholder, not yet paid?"""
    return text.startswith(PLACEHOLDER_MARK) and APPROVAL_WAIT in text


def task_id_for_call(call_id: str) -> str:
    """The background task id under which an interrupted call keeps running."""
    return f"task-{call_id}"


def interrupted_placeholder(
    *, tool: str, call_id: str, elapsed_s: float, cause: str, cancelled: bool
) -> str:
    task_id = task_id_for_call(call_id)
    if cancelled:
        return (
            f"{PLACEHOLDER_MARK} {tool} was interrupted after {elapsed_s:.1f} s because "
            f"{cause}. It was cancelled and may have partially executed — verify its "
            f"effects before retrying. Its final status will arrive later as a separate "
            f"tool.result event for call {call_id} (task {task_id})."
        )
    return (
        f"{PLACEHOLDER_MARK} {tool} is still running in the background as task "
        f"{task_id} (interrupted after {elapsed_s:.1f} s because {cause}). Its real "
        f"result will arrive later as a tool.result event for call {call_id} — do not "
        f"assume it succeeded. task_status('{task_id}') shows its progress."
    )


def stopped_by_shutdown_placeholder(*, tool: str, call_id: str, elapsed_s: float) -> str:
    """For a call cut off because the daemon itself was stopping: no later event comes."""
    return (
        f"{PLACEHOLDER_MARK} {tool} (call {call_id}) was interrupted after {elapsed_s:.1f} s "
        f"because the daemon was stopping. It was cancelled and may have partially "
        f"executed — verify its effects before retrying."
    )


def missing_result_placeholder(*, tool: str, call_id: str) -> str:
    """For a call whose result was never recorded (the daemon stopped while it ran)."""
    return (
        f"{PLACEHOLDER_MARK} No result was recorded for {tool} (call {call_id}): the "
        f"daemon stopped or restarted while it ran. It may have partially executed — "
        f"verify its effects before retrying."
    )


def tool_message(call_id: str, text: str) -> dict[str, str]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def awaiting_approval_placeholder(
    *, tool: str, call_id: str, approval_id: str, reason: str, requested_at: str, expires_at: str
) -> str:
    """For a call the policy chain holds for the owner's approval. The decision comes
    as an ``approval.decided`` event and the outcome as a ``tool.result`` event; the
    approvals service, not the restart's late-result check, pays it."""
    return (
        f"{PLACEHOLDER_MARK} {tool} (call {call_id}) has not run: {APPROVAL_WAIT} "
        f"{approval_id}, requested at {requested_at}, because {reason}. "
        f"The decision arrives as a new event (approval.decided, then a tool.result event "
        f"for call {call_id}); if nobody decides by {expires_at} it is denied. Do not assume "
        f"it ran, and do not call it again meanwhile."
    )
