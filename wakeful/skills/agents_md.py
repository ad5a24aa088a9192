"""Standing instructions from ``AGENTS.md`` in the workspace, for the system prompt.

Read once, when the daemon starts: the system prompt is the first bytes of
every request and must not change under a session's prompt cache, so an edit
applies after a restart (to every session). A file too large to be standing
instructions is refused with one warning rather than cut at an arbitrary byte.
"""

from __future__ import annotations

from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

AGENTS_FILE = "AGENTS.md"
MAX_BYTES = 32 * 1024


def read_agents_md(workspace: Path) -> str:
    """The prompt section for ``<workspace>/AGENTS.md``; "" when there is none."""
    path = workspace / AGENTS_FILE
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            log.warning(
                "AGENTS.md not loaded: too large",
                file=str(path),
                bytes=size,
                fix=f"keep standing instructions under {MAX_BYTES // 1024} KiB",
            )
            return ""
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("AGENTS.md not loaded", file=str(path), problem=str(exc))
        return ""
    if not text:
        return ""
    return f"Standing instructions (AGENTS.md in the workspace):\n{text}"
