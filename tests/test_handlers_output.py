"""Tests for head + tail shaping of long tool output."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from wakeful.core.tool_output import NO_OUTPUT, shape_output


def _saved_path(shaped: str) -> Path:
    match = re.search(r'read_file\(path="([^"]+)"', shaped)
    assert match is not None, shaped
    return Path(match.group(1))


def test_short_text_passes_unchanged(tmp_path: Path) -> None:
    """Output within the line and character budgets is returned as it is, with no file."""
    text = "".join(f"line {i}\n" for i in range(100))
    assert shape_output(text, output_dir=tmp_path, name_hint="c1") == text
    assert list(tmp_path.iterdir()) == []


def test_empty_output_becomes_a_note(tmp_path: Path) -> None:
    """Empty output is never returned as an empty string."""
    assert shape_output("", output_dir=tmp_path, name_hint="c1") == NO_OUTPUT


def test_long_output_keeps_head_and_tail_and_saves_full_text(tmp_path: Path) -> None:
    """1000 lines keep lines 0-49 and 950-999, say 900 were omitted, and save everything."""
    text = "".join(f"line {i}\n" for i in range(1000))
    shaped = shape_output(text, output_dir=tmp_path, name_hint="call-7")
    kept = [line for line in shaped.splitlines() if line.startswith("line ")]
    assert kept == [f"line {i}" for i in [*range(50), *range(950, 1000)]]
    assert "900 lines" in shaped
    assert "1000 lines" in shaped
    path = _saved_path(shaped)
    assert path.parent == tmp_path
    assert path.read_text() == text
    assert "offset=50" in shaped


def test_one_huge_line_is_capped_by_characters(tmp_path: Path) -> None:
    """A single line longer than max_chars is cut to its start and end, and saved whole."""
    text = "a" * 30_000 + "b" * 30_000
    shaped = shape_output(text, output_dir=tmp_path, name_hint="x", max_chars=2000)
    assert len(shaped) < 3000
    assert shaped.startswith("a" * 1000)
    assert shaped.endswith("b" * 1000)
    assert "58000 characters" in shaped
    assert _saved_path(shaped).read_text() == text


def test_name_hint_cannot_escape_the_output_dir(tmp_path: Path) -> None:
    """A hostile name hint still yields a file directly inside output_dir."""
    shaped = shape_output("x\n" * 500, output_dir=tmp_path, name_hint="../../etc/passwd")
    assert _saved_path(shaped).parent == tmp_path


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab\n\r é"), max_size=400))
def test_shaping_never_loses_text_silently(text: str) -> None:
    """Any output is either returned whole, or saved whole with a non-empty summary."""
    with tempfile.TemporaryDirectory() as tmp:
        shaped = shape_output(
            text, output_dir=Path(tmp), name_hint="p", head_lines=3, tail_lines=3, max_chars=50
        )
        assert shaped
        if shaped != text and text:
            assert _saved_path(shaped).read_bytes().decode("utf-8") == text
