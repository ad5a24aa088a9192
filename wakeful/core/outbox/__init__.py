"""The outgoing-message port: every message that leaves the agent is a durable record.

What a message is and how it is kept are the store's (``wakeful/store/outbox/``:
the shared state machine, the record, the ``OutgoingMessages`` port and its SQLite
and Redis backends; ``states``, ``record`` and ``port`` here name them for the
layers above). Here: ``factory`` (the store's backend, opened), ``channels`` (the
``Channel`` protocol), ``deliverer`` (the one place a message is sent, exactly
once), ``targets`` (where a reply goes) and ``service`` (what the agent calls).
"""
