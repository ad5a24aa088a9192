"""The email tools: read, search, move, archive, flag, draft and send."""
