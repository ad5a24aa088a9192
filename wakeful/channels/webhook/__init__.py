"""Webhook ingress: ``POST /hooks/{name}``, verified, mapped and committed (SPEC §3)."""

from wakeful.channels.webhook.component import WebhookComponent

__all__ = ["WebhookComponent"]
