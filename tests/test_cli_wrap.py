"""The chat's rows: each fits the terminal, words are kept whole where they fit, and no
character is lost or added (wakeful/cli/wrap.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from wcwidth import wcswidth

from wakeful.cli.wrap import fit, wrap

WORD = st.text(st.sampled_from("abcxyz日本🙂-"), min_size=1, max_size=14)
LINE = st.lists(WORD, max_size=40).map(" ".join)
COLUMNS = st.integers(min_value=4, max_value=120)


@given(LINE, COLUMNS)
def test_every_row_fits_and_only_spaces_at_breaks_are_dropped(line: str, columns: int) -> None:
    rows = wrap(line, columns)
    assert all(wcswidth(row) <= columns - 1 for row in rows)
    assert "".join(rows).replace(" ", "") == line.replace(" ", "")


@given(LINE, COLUMNS)
def test_a_word_that_fits_a_row_is_never_cut(line: str, columns: int) -> None:
    rows = wrap(line, columns)
    words_in_rows = [word for row in rows for word in row.split(" ") if word]
    for word in line.split(" "):
        if word and wcswidth(word) <= columns - 1:
            assert word in words_in_rows


@given(LINE, COLUMNS)
def test_the_streamed_rest_fits_above_the_prompt(line: str, columns: int) -> None:
    rows, rest = fit(line, columns)
    assert wcswidth(rest) <= columns - 1
    assert [*rows, rest] == wrap(line, columns)


def test_a_short_line_is_left_alone() -> None:
    assert wrap("two words", 80) == ["two words"]
    assert fit("two words", 80) == ([], "two words")
