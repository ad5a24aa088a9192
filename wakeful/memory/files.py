"""The memory files, the owner's to read and edit: MEMORY.md (durable facts and
preferences), memory/YYYY-MM-DD.md (daily notes) and memory/review.md (what was
saved while the session had read a third party's words, until the owner decides).

An entry the agent saved is one list line ending in its id, ``- text <!-- mem-… -->``;
lines without one are the owner's. The files are the truth; the index is derived.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from wakeful.kernel.atomic_file import write_atomic

MEMORY_FILE = "MEMORY.md"
NOTES_DIR = "memory"
REVIEW_FILE = f"{NOTES_DIR}/review.md"
MAX_ENTRY_CHARS = 1000
_MARK = re.compile(r"\s*<!-- (mem-[0-9a-f]{8}) -->\s*$")
_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")

HEADERS = {
    MEMORY_FILE: (
        "# Memory\n\n<!-- Durable facts and preferences, shown to the agent at the start of "
        "every session. Edit freely: lines you write are yours; a line ending in an id was "
        "saved by the agent (`wakeful memory show ID` says when and why). -->\n\n"
    ),
    REVIEW_FILE: (
        "# Waiting for review\n\n<!-- Saved while the session had read a third party's words "
        "(an e-mail, a web page): shown to the agent only as quoted third-party data, never "
        "in its digest, until you approve it (`wakeful memory approve ID`) or forget it. -->\n\n"
    ),
}


class MemoryPathError(ValueError):
    """Not one of the memory files; the message names the ones there are."""


@dataclass(frozen=True)
class Line:
    number: int  # from 1
    text: str  # without the entry's id
    entry_id: str | None  # None: the owner's own line


def day_file(day: date) -> str:
    return f"{NOTES_DIR}/{day.isoformat()}.md"


def day_of(relative: str) -> date | None:
    """The day a daily-note file is for, or None for MEMORY.md and review.md."""
    folder, _, name = relative.rpartition("/")
    found = _DAY.match(name) if folder == NOTES_DIR else None
    return date.fromisoformat(found.group(1)) if found else None


def entry_line(text: str, entry_id: str) -> str:
    """One line, whatever the text held: no line breaks, no forged id at its end."""
    flat = " ".join(text.split())[:MAX_ENTRY_CHARS].replace("<!--", "< !--")
    return f"- {flat} <!-- {entry_id} -->\n"


class MemoryFiles:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, relative: str) -> Path:
        """The file ``relative`` names, if it is a memory file (never a path outside)."""
        relative = relative.strip().lstrip("./")
        if relative in (MEMORY_FILE, REVIEW_FILE) or day_of(relative) is not None:
            return self.root / relative
        raise MemoryPathError(
            f"{relative!r} is not a memory file: name {MEMORY_FILE}, {REVIEW_FILE} or a day's "
            f"notes as {NOTES_DIR}/YYYY-MM-DD.md"
        )

    def names(self) -> list[str]:
        """Every memory file there is: MEMORY.md, the daily notes by day, review.md."""
        found = [MEMORY_FILE] if (self.root / MEMORY_FILE).is_file() else []
        notes = self.root / NOTES_DIR
        if notes.is_dir():
            days = sorted(p.name for p in notes.iterdir() if _DAY.match(p.name) and p.is_file())
            found += [f"{NOTES_DIR}/{name}" for name in days]
            if (self.root / REVIEW_FILE).is_file():
                found.append(REVIEW_FILE)
        return found

    def read(self, relative: str) -> str:
        path = self.path(relative)
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""

    def signature(self, relative: str) -> str:
        """Changes when the file does (the index re-reads it then)."""
        try:
            stat = self.path(relative).stat()
        except FileNotFoundError:
            return ""
        return f"{stat.st_mtime_ns}:{stat.st_size}"

    def lines(self, relative: str) -> list[Line]:
        """The file's content lines: not its title, comments or blank lines."""
        found = []
        for number, raw in enumerate(self.read(relative).splitlines(), start=1):
            if not raw.strip() or raw.startswith("# ") or _COMMENT.match(raw):
                continue
            mark = _MARK.search(raw)
            text = raw[: mark.start()] if mark else raw
            found.append(Line(number, text.rstrip(), mark.group(1) if mark else None))
        return found

    def append(self, relative: str, line: str) -> None:
        path = self.path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = "" if path.exists() else HEADERS.get(relative, f"# Notes of {relative[7:-3]}\n\n")
        with path.open("a", encoding="utf-8") as file:
            file.write(header + line)
            file.flush()
            os.fsync(file.fileno())

    def remove(self, relative: str, entry_id: str) -> bool:
        """Take the entry's line out of the file (the rest as it was); False: not there."""
        path = self.path(relative)
        if not path.is_file():
            return False
        kept, removed = [], False
        for raw in path.read_text(encoding="utf-8").splitlines(keepends=True):
            mark = _MARK.search(raw)
            if mark and mark.group(1) == entry_id:
                removed = True
            else:
                kept.append(raw)
        if removed:
            write_atomic(path, "".join(kept))
        return removed
