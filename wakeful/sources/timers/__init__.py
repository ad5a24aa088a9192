"""Persistent timers (SPEC §3, §6): APScheduler 3 on the daemon's loop and database.

A due timer only enqueues a ``timer.trigger`` event with the id
``timer:<job id>:<scheduled time>`` through the dispatcher; see ``firing``
for the misfire policy and ``wakeful.store.timers`` (the job stores, handed out
by the event store) for how runs survive a crash.
"""
