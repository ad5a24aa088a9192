"""``[[chat.xmpp]]``: one XMPP account the daemon chats as (one-to-one, with slixmpp)."""
