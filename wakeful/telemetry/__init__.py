"""Traces over OpenTelemetry (``[telemetry]``); only ``config`` is imported by default."""
