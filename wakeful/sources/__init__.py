"""Event sources that are not conversations: webhooks, timers, shell tasks, system alerts,
subscriptions.
"""
