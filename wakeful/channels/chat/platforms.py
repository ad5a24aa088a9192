"""The chat platforms' names, as `[[chat.<platform>]]`, the pairing API and `wakeful
pairing` spell them. Nothing imported: the CLI's argument parser reads it on every
command. tests/test_chat_foundation.py checks it against the `[chat]` section's fields,
so a platform added there and not here fails a test."""

PLATFORMS = ("telegram", "slack", "matrix", "signal", "whatsapp", "discord", "xmpp")
