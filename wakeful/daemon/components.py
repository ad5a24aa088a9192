"""The components the daemon runs besides its core, in start order.

Each is a :data:`wakeful.daemon.services.Component`; add a channel or
service by appending its factory here.
"""

from __future__ import annotations

from wakeful.channels.email.component import email_component
from wakeful.channels.shell import shell_component
from wakeful.channels.timers import timers_component
from wakeful.channels.webhook import webhook_component
from wakeful.daemon.services import Component


def default_components() -> list[Component]:
    return [webhook_component, shell_component, timers_component, email_component]
