"""The outgoing-message port: every message that leaves the agent is a durable record.

What a message is and how it is kept are the store's (``wakeful/store/outbox/``:
the shared state machine, the record, the ``OutgoingMessages`` port and its SQLite
and Redis backends). The store owns them because its backends need them and it sits
below the core (it may not import from here); every layer imports them from there.
Here: ``factory`` (the store's backend, opened), ``channels`` (the ``Channel``
protocol), ``deliverer`` (the one place a message is sent, exactly once),
``targets`` (where a reply goes) and ``service`` (what the agent calls).
"""
