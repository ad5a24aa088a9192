"""Conversation channels: web, terminal, Telegram, Slack, Matrix, email.

Each package is one channel; `wakeful.app.components` lists them.
"""
