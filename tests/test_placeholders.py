"""Placeholder tool results (SPEC §4 rule 3): deterministic and honest."""

from __future__ import annotations

import pytest

from wakeful.core.trajectory.placeholders import (
    PLACEHOLDER_MARK,
    interrupted_placeholder,
    missing_result_placeholder,
    task_id_for_call,
    tool_message,
)


def interrupted(cancelled: bool, elapsed_s: float = 4.2) -> str:
    return interrupted_placeholder(
        tool="shell_exec",
        call_id="call_7",
        elapsed_s=elapsed_s,
        cause="the user asked to stop",
        cancelled=cancelled,
    )


@pytest.mark.parametrize("cancelled", [True, False])
def test_interrupted_placeholder_is_deterministic(cancelled: bool) -> None:
    """The same inputs give byte-identical placeholder text, every time."""
    texts = {interrupted(cancelled).encode() for _ in range(5)}
    assert len(texts) == 1


def test_missing_result_placeholder_is_deterministic() -> None:
    """The restart placeholder is a pure function of tool and call id."""
    first = missing_result_placeholder(tool="fetch_url", call_id="call_1")
    assert first == missing_result_placeholder(tool="fetch_url", call_id="call_1")
    assert first != missing_result_placeholder(tool="fetch_url", call_id="call_2")


@pytest.mark.parametrize(("elapsed", "shown"), [(4.2, "4.2 s"), (12.0, "12.0 s"), (0.04, "0.0 s")])
def test_elapsed_time_has_one_decimal(elapsed: float, shown: str) -> None:
    """The elapsed time appears with exactly one decimal, in both variants."""
    assert f"after {shown}" in interrupted(True, elapsed)
    assert f"after {shown}" in interrupted(False, elapsed)


def test_cancelled_placeholder_is_honest() -> None:
    """A cancelled call's placeholder says it may have partially executed; names call and task."""
    text = interrupted(True)
    assert text.startswith(PLACEHOLDER_MARK)
    assert "shell_exec" in text
    assert "interrupted after 4.2 s" in text
    assert "the user asked to stop" in text
    assert "may have partially executed" in text
    assert "verify" in text
    assert "call_7" in text
    assert task_id_for_call("call_7") in text


def test_background_placeholder_says_still_running() -> None:
    """A call left running says so, names its task and call, and warns not to assume success."""
    text = interrupted(False)
    assert text.startswith(PLACEHOLDER_MARK)
    assert "still running in the background" in text
    assert "do not assume it succeeded" in text
    assert "call_7" in text
    assert "task-call_7" in text


def test_missing_result_placeholder_is_honest() -> None:
    """The restart placeholder names tool and call and says the call may have partially executed."""
    text = missing_result_placeholder(tool="send_email", call_id="call_3")
    assert text.startswith(PLACEHOLDER_MARK)
    assert "send_email" in text
    assert "call_3" in text
    assert "may have partially executed" in text


def test_placeholders_never_say_rejected() -> None:
    """No placeholder claims the call was rejected or denied."""
    texts = [
        interrupted(True),
        interrupted(False),
        missing_result_placeholder(tool="shell_exec", call_id="call_7"),
    ]
    for text in texts:
        lowered = text.casefold()
        assert "reject" not in lowered
        assert "denied" not in lowered


def test_tool_message_pairs_call_id_and_text() -> None:
    """tool_message builds a tool-role message for the call id with the text as content."""
    assert tool_message("call_7", "x") == {"role": "tool", "tool_call_id": "call_7", "content": "x"}


def test_an_approval_wait_is_not_a_late_result_the_restart_check_pays() -> None:
    """The approvals service pays an approval's placeholder; the restart's late-result
    check (which fails a promise whose task is gone) must never take it for its own,
    whatever words the placeholder's reason holds."""
    from wakeful.core.trajectory.placeholders import (
        awaiting_approval_placeholder,
        awaits_approval,
        interrupted_placeholder,
        promises_late_result,
    )

    waiting = awaiting_approval_placeholder(
        tool="shell_exec",
        call_id="c1",
        approval_id="k3fwz2qp",
        reason="its result will arrive later as a file",  # the late-result phrase, quoted
        requested_at="10:00",
        expires_at="11:00",
    )
    assert awaits_approval(waiting) and not promises_late_result(waiting)
    running = interrupted_placeholder(
        tool="shell_exec", call_id="c2", elapsed_s=1.0, cause="you wrote", cancelled=False
    )
    assert promises_late_result(running) and not awaits_approval(running)
