"""The composition root: config assembly, the daemon's lifespan, the HTTP app, systemd."""

from wakeful.kernel.structlog_import import import_structlog_without_rich

# Before any module of the daemon imports structlog (every daemon path imports this
# package first; a client command never does): see wakeful/kernel/structlog_import.py.
import_structlog_without_rich()
