"""Discord: a bot on the Gateway (websocket) for what arrives, the REST API for what it sends."""
