"""How channels and tool families plug into the daemon (see ``context.py``)."""
