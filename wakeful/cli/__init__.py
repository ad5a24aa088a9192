"""The `wakeful` command: a client of the running daemon, plus `run`."""
