"""The local chat channel: the session's event stream, read by `wakeful chat` and the web page."""
