"""The webhook channel as a daemon component: builds the hooks, adds the route."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus
from starlette.routing import Route

from wakeful.core.components.context import ComponentSetup
from wakeful.kernel.config_base import ConfigError
from wakeful.kernel.logging import add_secrets
from wakeful.sources.webhook.auth import make_verifier
from wakeful.sources.webhook.config import HookConfig
from wakeful.sources.webhook.delivery import Hook
from wakeful.sources.webhook.ingress import HookIngress
from wakeful.sources.webhook.mapping import DeliveryFilter
from wakeful.sources.webhook.secrets import resolve_secrets

if TYPE_CHECKING:  # the composed config lives in the app; its type only
    from wakeful.app.config import Settings


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


class WebhookComponent:
    """``POST /hooks/{name}``; hooks apply again on SIGHUP."""

    name = "webhooks"

    async def configure(self, setup: ComponentSetup) -> None:
        hooks = {config.name: build_hook(config) for config in setup.settings.hooks}
        self.ingress = HookIngress(hooks, setup.submit)
        # Registered even with no hooks, so a sender gets a 404 that says how to add one.
        setup.add_route(Route("/hooks/{name}", self.ingress.handle, methods=["POST"]), hot=True)
        setup.add_direct_route(self.ingress)  # most deliveries: answered below ASGI
        setup.add_status("webhooks", self.ingress.stats)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()  # requests arrive through the route; nothing runs here

    async def reload(self, settings: Settings) -> list[str]:
        try:
            hooks = {config.name: build_hook(config) for config in settings.hooks}
        except ConfigError as exc:  # the running hooks stay as they were
            raise ValueError(str(exc)) from None
        self.ingress.replace_hooks(hooks)
        return ["hooks"]
