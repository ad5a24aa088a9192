"""Where events come from and replies go out; the registry of daemon components.

:func:`default_components` is the one list the daemon's lifespan reads.
Adding a channel touches its own package and this list, no core module. A
channel whose configuration is empty is not even imported: the email stack
alone costs a noticeable part of start-up, and READY should not wait for what
is not used.
"""

from __future__ import annotations

from wakeful.daemon.components.context import Component
from wakeful.daemon.config import Settings


def default_components(settings: Settings) -> list[Component]:
    from wakeful.channels.shell import shell_component
    from wakeful.channels.timers import timers_component
    from wakeful.channels.webhook import webhook_component

    components: list[Component] = [webhook_component, shell_component, timers_component]
    if settings.email.accounts:
        from wakeful.channels.email.component import email_component

        components.append(email_component)
    return components
