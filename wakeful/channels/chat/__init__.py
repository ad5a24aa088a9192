"""What every chat platform shares: the sender check and pairing, events with
their cursor, chunked delivery through the outbox, the typing indicator.

A platform package (telegram, slack, matrix) brings only its wire protocol: how
updates arrive, how a message is sent, how Markdown is rendered there.
"""
