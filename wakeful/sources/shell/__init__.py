"""Background shell tasks: start_shell, monitor_shell, their events and records."""
