"""`wakeful run` that says, as it exits, whether any OpenTelemetry module was imported.
Run as ``python -m tests.otel_import_probe -c CONFIG run``; the rest is the real daemon."""

from __future__ import annotations

import sys

from wakeful.app import service
from wakeful.cli.main import main

PREFIX = "opentelemetry modules imported:"
_exit_now = service.exit_now


def _report_then_exit(code: int) -> None:
    # The daemon ends by os._exit (service.exit_now): no atexit hook would run.
    loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
    print(PREFIX, ",".join(loaded) or "none", flush=True)
    _exit_now(code)


if __name__ == "__main__":
    service.exit_now = _report_then_exit
    sys.exit(main())
