"""The state port: what a component keeps across restarts, whichever backend keeps it.

A component asks the store for it (``setup.store.state()``) and never learns
which backend that is: SQLite (``sqlite_state.py``, tables of the daemon's
file) or Redis (``redis_state.py``, under ``[store] redis_prefix``, shared by
a fleet). The port is in ``port.py``.
"""
