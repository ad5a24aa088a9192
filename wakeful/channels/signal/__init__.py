"""Signal through a signal-cli daemon's JSON-RPC interface (``[[chat.signal]]``)."""
