"""The webhook channel as a daemon component: builds the hooks, adds the route."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.routing import Route

from wakeful.channels.webhook.auth import make_verifier
from wakeful.channels.webhook.delivery import Hook
from wakeful.channels.webhook.ingress import HookIngress
from wakeful.channels.webhook.mapping import DeliveryFilter
from wakeful.channels.webhook.secrets import resolve_secrets
from wakeful.daemon.components.context import Services
from wakeful.daemon.config import ConfigError, HookConfig, Settings
from wakeful.daemon.logging import add_secrets


def build_hook(config: HookConfig) -> Hook:
    """The hook with its secrets read; ConfigError names the key when one is unusable."""
    secrets = resolve_secrets(config)
    # Before anything can fail and log: a secret must never reach a log line.
    add_secrets(secrets)
    try:
        verifier = make_verifier(config.auth, secrets)
    except ValueError as exc:
        raise ConfigError(f"hooks '{config.name}' secret (auth = {config.auth!r}): {exc}") from None
    return Hook(config, verifier, DeliveryFilter.build(config.events, config.filters))


class WebhookReloader:
    """SIGHUP: hooks added, removed or changed in the config apply without a restart."""

    def __init__(self, ingress: HookIngress) -> None:
        self._ingress = ingress

    async def reload(self, settings: Settings) -> list[str]:
        try:
            hooks = {config.name: build_hook(config) for config in settings.hooks}
        except ConfigError as exc:  # the running hooks stay as they were
            raise ValueError(str(exc)) from None
        self._ingress.replace_hooks(hooks)
        return ["hooks"]


@asynccontextmanager
async def webhook_component(services: Services) -> AsyncIterator[WebhookReloader]:
    hooks = {config.name: build_hook(config) for config in services.settings.hooks}
    ingress = HookIngress(hooks, services.submit)
    # Registered even with no hooks, so a sender gets a 404 that says how to add one.
    services.hot_routes.append(Route("/hooks/{name}", ingress.handle, methods=["POST"]))
    services.status_providers["webhooks"] = ingress.stats
    yield WebhookReloader(ingress)
