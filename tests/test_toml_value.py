"""The one writer of TOML values (wakeful/kernel/config_files.py): whatever onboard, the
OpenClaw import, the config reference or a config error writes reads back as itself."""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from wakeful.app.config import Settings
from wakeful.kernel.config_files import toml_value

# Any text (control characters, quotes, backslashes, DEL, non-ASCII; no lone surrogates,
# which no file can hold), numbers, booleans, and lists and tables of them.
TEXT = st.text(st.characters(exclude_categories=["Cs"]))
SCALARS = TEXT | st.integers(-(2**63), 2**63 - 1) | st.booleans()
SCALARS |= st.floats(allow_nan=False)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner) | st.dictionaries(TEXT, inner), max_leaves=12
)


@given(VALUES)
def test_any_value_reads_back_as_itself(value: Any) -> None:
    assert tomllib.loads(f"key = {toml_value(value)}")["key"] == value


def test_a_float_keeps_its_value_and_its_kind() -> None:
    read = tomllib.loads(f"a = {toml_value(1.0)}\nb = {toml_value(math.inf)}")
    assert (read["a"], type(read["a"]), read["b"]) == (1.0, float, math.inf)


def _examples(model: type[BaseModel]) -> Iterator[tuple[str, Any]]:
    for key, field in model.model_fields.items():
        if field.examples:
            yield key, field.examples[0]
        for inner in (field.annotation, *getattr(field.annotation, "__args__", ())):
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                yield from _examples(inner)


def test_every_example_in_the_config_reference_is_the_toml_of_itself() -> None:
    """docs/configuration.md's "Example: `key = value`" reads back as the field's example
    (a table's example was once written as the text of a Python dict)."""
    text = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()
    documented: dict[str, list[Any]] = {}
    for line in re.findall(r"Example: `(.+?)`\.", text):
        for key, value in tomllib.loads(line).items():
            documented.setdefault(key, []).append(value)
    examples = list(_examples(Settings))
    assert any(isinstance(example, dict) for _key, example in examples)
    for key, example in examples:
        if key in documented:  # secrets' examples are left out of the page
            assert to_jsonable_python(example) in documented[key], key
