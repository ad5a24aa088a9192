"""Webhook ingress: ``POST /hooks/{name}``, verified, mapped and committed (SPEC §3)."""
