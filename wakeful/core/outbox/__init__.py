"""The outgoing-message port: every message that leaves the agent is a durable record.

``states`` (the shared state machine), ``record`` (what a message is), ``port``
(the ``OutgoingMessages`` protocol), its backends (``sqlite_backend``,
``redis_backend``, picked by ``factory``), ``channels`` (the ``Channel``
protocol), ``deliverer`` (the one place a message is sent, exactly once),
``targets`` (where a reply goes) and ``service`` (what the agent calls).
"""
