"""Matrix: a chat platform over the client-server API (``[[chat.matrix]]``)."""
