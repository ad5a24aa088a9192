"""Webhook ingress: ``POST /hooks/{name}``, verified, mapped and committed (SPEC §3)."""

from wakeful.channels.webhook.component import webhook_component

__all__ = ["webhook_component"]
