"""Slack: the Events API over HTTP in, ``chat.postMessage`` out."""
