"""Long tool output kept as head + tail, with the full text saved to a file.

The model needs the start (what ran, first errors) and the end (final status,
last errors) of long output; the middle is saved, never silently dropped, and
the note says exactly where it is and how to read it.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from wakeful.kernel.logging import redact_text

NO_OUTPUT = "(no output)"
# The whole outputs/ dir ([loop] outputs_max_mb); past it the oldest files go first.
DEFAULT_OUTPUTS_MAX_BYTES = 256 * 1024 * 1024

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def saved_outputs_dir(data_dir: Path) -> Path:
    """Where full outputs are saved: the one directory outside the workspace that
    read_file may read (read-only). Pruning looks only at its top-level files."""
    return data_dir / "outputs"


def shape_output(
    text: str,
    *,
    output_dir: Path,
    name_hint: str,
    head_lines: int = 50,
    tail_lines: int = 50,
    max_chars: int = 20_000,
    outputs_max_bytes: int = DEFAULT_OUTPUTS_MAX_BYTES,
) -> str:
    """Return ``text`` unchanged when short, else its head and tail plus a note.

    The full text of long output is written to a new file under
    ``output_dir`` whose path is given in the note. Every tool result passes
    here (the registry's safety net), so this is where secrets the daemon knows
    are redacted: before the result is kept inline, saved in full, or shown.
    """
    if not text:
        return NO_OUTPUT
    text = redact_text(text)
    lines = text.splitlines(keepends=True)
    if len(lines) <= head_lines + tail_lines and len(text) <= max_chars:
        return text
    n_head = min(head_lines, len(lines))
    n_tail = min(tail_lines, len(lines) - n_head)
    head = "".join(lines[:n_head])
    tail = "".join(lines[len(lines) - n_tail :])
    if len(head) + len(tail) > max_chars:
        # Very long lines defeat a line budget: fall back to characters.
        half = max(1, max_chars // 2)
        head, tail = text[:half], text[-half:]
    path = save_full_output(
        text, output_dir=output_dir, name_hint=name_hint, outputs_max_bytes=outputs_max_bytes
    )
    note = _omission_note(
        omitted_lines=text.count("\n", len(head), len(text) - len(tail)),
        omitted_chars=len(text) - len(head) - len(tail),
        total_lines=len(lines),
        total_chars=len(text),
        path=path,
        resume_offset=head.count("\n"),
    )
    if head and not head.endswith("\n"):
        head += "\n"
    return f"{head}{note}\n{tail}"


def save_full_output(
    text: str,
    *,
    output_dir: Path,
    name_hint: str,
    outputs_max_bytes: int = DEFAULT_OUTPUTS_MAX_BYTES,
) -> Path:
    """Write ``text`` to a new, uniquely named file under ``output_dir``, then remove
    the oldest files until the directory is within ``outputs_max_bytes``."""
    output_dir.mkdir(parents=True, exist_ok=True)
    stem = _UNSAFE_NAME.sub("_", name_hint).strip("_.")[:80] or "output"
    # A random suffix: the same call id may be shaped more than once.
    path = output_dir / f"{stem}-{uuid.uuid4().hex[:8]}.txt"
    path.write_text(text, encoding="utf-8", newline="")
    prune_outputs(output_dir, outputs_max_bytes, keep=path)
    return path


def prune_outputs(output_dir: Path, max_bytes: int, *, keep: Path) -> list[Path]:
    """Remove the oldest files (by mtime) until the total is within ``max_bytes``;
    ``keep`` (the file just written, which the model is about to be told of) stays."""
    files: list[tuple[float, int, Path]] = []
    for entry in output_dir.iterdir():
        try:
            info = entry.stat()
        except OSError:  # removed meanwhile
            continue
        if entry.is_file():
            files.append((info.st_mtime, info.st_size, entry))
    total = sum(size for _, size, _ in files)
    removed: list[Path] = []
    for _, size, entry in sorted(files, key=lambda item: item[0]):
        if total <= max_bytes:
            break
        if entry == keep:
            continue
        entry.unlink(missing_ok=True)
        total -= size
        removed.append(entry)
    return removed


def _omission_note(
    *,
    omitted_lines: int,
    omitted_chars: int,
    total_lines: int,
    total_chars: int,
    path: Path,
    resume_offset: int,
) -> str:
    return (
        f"[... {omitted_lines} lines ({omitted_chars} characters) omitted here. "
        f"The full output ({total_lines} lines, {total_chars} characters) is saved in "
        f"{path} - read the omitted part with "
        f'read_file(path="{path}", offset={resume_offset}, limit=200) ...]'
    )
