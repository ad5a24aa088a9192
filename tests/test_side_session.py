"""The side session's requests come from the one normalizer (SPEC §4, §5 parallel)."""

from __future__ import annotations

from typing import Any

from tests.test_normalizer import assistant, call, result, user
from tests.trajectory_validator import validate_both
from wakeful.core.loop.parallel import running_note, side_request_messages
from wakeful.core.trajectory.normalizer import normalize
from wakeful.core.trajectory.placeholders import PLACEHOLDER_MARK, tool_message

Message = dict[str, Any]
ASK = user("[Side question] what time is it?")


def test_running_step_is_cut_not_given_placeholders() -> None:
    """While the main task's tools run, the side request ends at the last whole
    step: no placeholder makes the main task look interrupted."""
    main = [
        user("build"),
        assistant(call("c1", "shell_exec"), call("c2", "get_time")),
        result("c2"),
    ]
    messages, running = side_request_messages("sys", main, [ASK])
    assert messages == [{"role": "system", "content": "sys"}, user("build"), ASK]
    assert running == {"c1": "shell_exec"}  # c2 has finished
    assert running_note(running) == "The main task is currently running: shell_exec"
    assert PLACEHOLDER_MARK not in str(messages)
    validate_both(messages)


def test_side_turns_follow_the_snapshot_and_stay_paired() -> None:
    """The side session's own tool call and result (built by tool_message) are
    kept; an idle main trajectory is carried whole."""
    main = [user("hi"), assistant(content="hello")]
    side = [ASK, assistant(call("s1", "get_time")), tool_message("s1", "10:00 UTC")]
    messages, running = side_request_messages("sys", main, side)
    assert messages[1:] == [*main, *side]
    assert running == {} and running_note(running) == ""
    validate_both(messages)


def test_cut_unfinished_keeps_other_repairs() -> None:
    """An orphan result is still dropped; only the open step is cut, whole."""
    main = [user(), result("ghost"), assistant(call("c1")), result("c1"), user("next")]
    main += [assistant(call("c2"), call("c3")), result("c3")]
    normalized = normalize(main, cut_unfinished=True)
    assert normalized.messages == main[:1] + main[2:5]
    assert normalized.dropped == [result("ghost")]
    assert normalized.cut == main[5:]
    assert normalized.placeholders == []
    assert normalized.changed


def test_default_still_gives_placeholders() -> None:
    main = [user(), assistant(call("c1"))]
    assert len(normalize(main).placeholders) == 1
    assert normalize(main).cut == []
