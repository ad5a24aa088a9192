"""Background shell tasks: start_shell, monitor_shell, their events and records."""

from wakeful.channels.shell.component import ShellComponent

__all__ = ["ShellComponent"]
