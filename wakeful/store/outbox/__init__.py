"""The outbox's durable state: every outgoing message as a record, on either backend.

``states`` (the one state machine), ``record`` (what a message is), ``port`` (the
``OutgoingMessages`` protocol) and its backends, ``sqlite`` (a table of the
daemon's SQLite file) and ``redis`` (under the event store's key prefix). The
store hands out the one that lives where it does (``Store.outbox_messages``);
what sends them is the core's (``wakeful/core/outbox/``).
"""
