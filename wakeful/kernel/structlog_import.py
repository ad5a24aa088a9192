"""structlog imported without rich: the daemon's logs never use it, and it costs start-up.

``import structlog`` imports its ``dev`` and ``tracebacks`` modules, which import rich
whenever it is installed (a development environment has it through import-linter; a
plain ``pip install wakeful`` does not): ~40 ms of a ~500 ms start. The daemon's
pipeline (``wakeful.kernel.logging``) turns tracebacks into text with
``format_exc_info`` before any renderer sees them and renders without colours, so
rich's traceback and pretty-printing are never called. Hiding rich while structlog is
first imported makes every install start as a plain one does; rich itself stays
importable afterwards for anything else that wants it.
"""

from __future__ import annotations

import sys


def import_structlog_without_rich() -> None:
    """Import structlog first, with rich hidden from it (no-op once either is imported)."""
    if "structlog" in sys.modules or "rich" in sys.modules:
        return
    sys.modules["rich"] = None  # type: ignore[assignment]  # `import rich` raises ImportError
    try:
        import structlog  # noqa: F401
    finally:
        del sys.modules["rich"]
