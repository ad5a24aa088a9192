"""A background command's output as lines: bounded in memory, complete on disk.

The process writes bytes; monitors, progress and the model want lines. The
splitter decodes incrementally (a UTF-8 character may straddle two reads)
and treats ``\\r`` as a line end too, so progress bars that redraw one line
still yield a line per update. Memory is bounded: the first lines, the last
lines and the progress figure; the full output lives in the task's file.
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAX_LINE_CHARS = 1000  # kept in memory and shown per line; the file keeps it whole
MAX_PENDING_CHARS = 65_536  # a "line" with no end for this long is handed on anyway
MAX_SHAPED_CHARS = 20_000

_PERCENT = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s*%")
_FRACTION = re.compile(r"\bprogress\b\s*[:=]?\s*(0(?:\.\d+)?|1(?:\.0+)?|\.\d+)(?![\d.%])", re.I)
_LINE_END = re.compile(r"\r\n|\r|\n")


class LineSplitter:
    """Turns chunks of bytes into complete lines; a partial line waits for more."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""

    def feed(self, chunk: bytes) -> Iterator[str]:
        text = self._partial + self._decoder.decode(chunk)
        parts = _LINE_END.split(text)
        self._partial = parts.pop()
        # "\r\n" split across two reads would yield one empty line: harmless.
        yield from parts
        if len(self._partial) > MAX_PENDING_CHARS:
            # No line end for a long while: hand on what we have rather than grow.
            yield self._partial
            self._partial = ""

    def close(self) -> Iterator[str]:
        rest = self._partial + self._decoder.decode(b"", final=True)
        self._partial = ""
        if rest:
            yield rest


def parse_progress(line: str) -> float | None:
    """The progress a line reports, in percent: the last "42%" or "progress: 0.42"."""
    percents = _PERCENT.findall(line)
    if percents:
        value = float(percents[-1])
        return value if 0 <= value <= 100 else None
    fractions = _FRACTION.findall(line)
    if fractions:
        return float(fractions[-1]) * 100
    return None


def format_progress(percent: float) -> str:
    return f"{percent:.0f}%" if percent == int(percent) else f"{percent:.1f}%"


@dataclass
class OutputTail:
    """What is kept in memory of the output: head, tail, counters, progress."""

    head_lines: int = 50
    tail_lines: int = 50
    memory_lines: int = 200
    lines: int = 0
    chars: int = 0
    progress: float | None = None
    _head: list[str] = field(default_factory=list)
    _tail: deque[str] = field(default_factory=deque)

    def add(self, line: str) -> None:
        self.lines += 1
        self.chars += len(line) + 1
        found = parse_progress(line)
        if found is not None:
            self.progress = found
        line = cut(line)
        if len(self._head) < self.head_lines:
            self._head.append(line)
        self._tail.append(line)
        while len(self._tail) > max(self.memory_lines, self.tail_lines):
            self._tail.popleft()

    def last(self, n: int) -> list[str]:
        return list(self._tail)[-n:] if n > 0 else []

    def shaped(self, full_output: Path) -> str:
        """Head + tail of the output, with where the rest is and how to read it."""
        if self.lines == 0:
            return "(no output)"
        if self.lines <= self.head_lines + self.tail_lines:
            # Everything fits: the head and the tail overlap or meet.
            overlap = self.lines - len(self._head)
            return "\n".join(self._head + self.last(overlap))
        omitted = self.lines - self.head_lines - self.tail_lines
        note = (
            f"[... {omitted} lines omitted here. The full output ({self.lines} lines, "
            f"{self.chars} characters) is saved in {full_output} - read the omitted part "
            f'with read_file(path="{full_output}", offset={self.head_lines}, limit=200) ...]'
        )
        head, tail = "\n".join(self._head), "\n".join(self.last(self.tail_lines))
        if len(head) + len(tail) > MAX_SHAPED_CHARS:
            # Long lines defeat the line budget: fall back to characters.
            head, tail = head[: MAX_SHAPED_CHARS // 2], tail[-MAX_SHAPED_CHARS // 2 :]
        return f"{head}\n{note}\n{tail}"


def cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f" [... line cut: {len(line)} characters in all]"
