"""The YAML front matter of a SKILL.md: the ``key: value`` lines between two ``---``.

A skill needs only ``name`` and ``description``, so this reads the subset of
YAML that SKILL.md files use — plain, quoted and folded (``>``/``|``) scalars —
instead of adding a YAML library. Nested keys (``metadata:`` with indented
lines) and lists are skipped, not misread: only top-level scalars come back.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(?:\s+(.*))?$")
_FENCE = "---"


class FrontMatterError(ValueError):
    """The file has no usable front matter; the message says what is wrong."""


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """The top-level scalar keys and the body after the closing ``---``."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != _FENCE:
        raise FrontMatterError("does not start with a '---' line (YAML front matter)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == _FENCE)
    except StopIteration:
        raise FrontMatterError("its front matter has no closing '---' line") from None
    return _scalars(lines[1:end]), "\n".join(lines[end + 1 :]).strip("\n") + "\n"


def _scalars(lines: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        match = _KEY.match(line)
        if match is None:
            continue  # indented (nested), a list item, a comment or blank
        key, value = match.group(1), (match.group(2) or "").strip()
        if value in (">", "|", ">-", "|-", ""):
            block: list[str] = []
            while index < len(lines) and (not lines[index].strip() or lines[index][:1] in " \t"):
                block.append(lines[index].strip())
                index += 1
            if not value:
                continue  # a nested mapping or list: not a scalar
            value = (" " if value.startswith(">") else "\n").join(b for b in block if b)
        values[key] = _unquote(value)
    return values


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace('\\"', '"')
    return value.split(" #", 1)[0].rstrip()  # a trailing comment on a plain scalar
