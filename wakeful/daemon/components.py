"""The components the daemon runs besides its core, in start order.

Each is a :data:`wakeful.daemon.services.Component`; add a channel or
service by appending its factory here. A channel whose configuration is
empty is not even imported: the email stack alone costs a noticeable part
of start-up, and READY should not wait for what is not used.
"""

from __future__ import annotations

from wakeful.daemon.config import Settings
from wakeful.daemon.services import Component


def default_components(settings: Settings) -> list[Component]:
    from wakeful.channels.shell import shell_component
    from wakeful.channels.timers import timers_component
    from wakeful.channels.webhook import webhook_component

    components: list[Component] = [webhook_component, shell_component, timers_component]
    if settings.email.accounts:
        from wakeful.channels.email.component import email_component

        components.append(email_component)
    return components
