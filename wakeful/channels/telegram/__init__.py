"""Telegram (Bot API) as a chat platform: long polling or a webhook, replies through the outbox."""
