"""`wakeful status`'s text, over generated statuses: the sessions that need a look first
and at most a screenful of them, every line inside the terminal's width, nothing the
daemon said dropped but empty fields."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from wakeful.cli.status_text import MAX_SESSIONS, status_lines, wrapped

names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
session_info = st.fixed_dictionaries(
    {"busy": st.booleans(), "pending": st.integers(0, 5)},
    optional={"context": st.just("2348 of 119808 tokens")},
)


@given(st.dictionaries(names, session_info, max_size=40))
def test_busy_sessions_come_first_and_the_list_is_cut_to_a_screen(
    sessions: dict[str, dict[str, Any]],
) -> None:
    lines = status_lines({"sessions": sessions, "model": {"configured": True}}, width=80)
    start = next(i for i, line in enumerate(lines) if line.startswith("sessions: "))
    rows = [line for line in lines[start + 1 :] if line.startswith("  ") and ": " in line]
    shown = [row.strip().split(":")[0] for row in rows if not row.startswith("  (+")]
    assert len(shown) == min(len(sessions), MAX_SESSIONS)
    busy = [name for name in shown if sessions[name]["busy"]]
    assert shown[: len(busy)] == busy  # the busy ones lead
    assert len(busy) == min(MAX_SESSIONS, sum(info["busy"] for info in sessions.values()))
    hidden = len(sessions) - MAX_SESSIONS
    assert (f"  (+{hidden} more idle: `wakeful status --all` lists them)" in lines) == (hidden > 0)


@given(st.text(st.sampled_from("ab c/:-"), max_size=300), st.integers(20, 200))
def test_a_long_line_breaks_at_spaces_inside_the_width(line: str, width: int) -> None:
    rows = wrapped(line, width)
    words = [w for w in line.split(" ") if w]
    assert [w for row in rows for w in row.split(" ") if w] == words  # nothing lost or cut
    assert all(len(row) <= width or " " not in row.strip() for row in rows)


def test_every_other_part_is_one_line_with_its_lists_below() -> None:
    status = {
        "timers": {"active": 0, "timers": []},
        "system": {"ok": True, "alerts": ["memory: since 09:00"], "limits": {"rss_mb": 1}},
    }
    lines = status_lines(status)
    assert "timers: active 0" in lines
    where = lines.index("system: ok yes, limits (rss_mb 1)")
    assert lines[where + 1 : where + 3] == ["  alerts:", "    - memory: since 09:00"]
