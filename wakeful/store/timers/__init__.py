"""Where the timers' jobs and fires in flight are kept, on either backend.

``port`` (``TimerJobStore`` and ``PendingFire``), ``restoring`` (what both job
stores share), ``sqlite`` (the daemon's SQLite file, one daemon), ``redis``
(shared by every daemon on the prefix) and ``redis_import`` (a daemon's timers
moved from its SQLite file into Redis once). The store hands out the one that
lives where it does (``Store.timer_jobs``); the scheduler and tools are the
timers source's (``wakeful/sources/timers/``).
"""
