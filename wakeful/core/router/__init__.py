"""The router: which of the three strategies (SPEC §5) each event gets."""

from wakeful.core.router.decision import Decision, Strategy
from wakeful.core.router.router import Router, stopped_tools

__all__ = ["Decision", "Router", "Strategy", "stopped_tools"]
