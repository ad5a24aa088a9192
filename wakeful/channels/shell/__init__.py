"""Background shell tasks: start_shell, monitor_shell, their events and records."""

from wakeful.channels.shell.component import shell_component

__all__ = ["shell_component"]
