"""The parts of uvicorn the daemon serves with, without uvicorn's command line.

``uvicorn/__init__`` imports ``uvicorn.main``: click, and through the reload and
worker supervisors, multiprocessing (~10-15 ms of start → READY), and any
``import uvicorn.<sub>`` runs that ``__init__`` first. The daemon uses only
``Config``, ``Server`` and the httptools protocol, so the package is entered here
without running its ``__init__``: a module with uvicorn's own path, which runs the
real ``__init__`` the first time anything reads a name it did not define yet
(``uvicorn.run``, ``uvicorn.__version__``; what tests and benches use keeps working,
in the same process too). Submodules import as usual.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any


class _PackageOnDemand(ModuleType):
    """uvicorn's package module whose ``__init__`` runs on the first unknown name."""

    def __getattr__(self, name: str) -> Any:
        # Only names not yet set land here; dunders Python probes for stay missing.
        if name.startswith("__") and name.endswith("__") and name not in ("__all__", "__version__"):
            raise AttributeError(name)
        spec = self.__spec__
        self.__class__ = ModuleType  # type: ignore[assignment]  # once: __init__ defines the rest
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(self)
        return getattr(self, name)


def _enter_uvicorn() -> None:
    if "uvicorn" in sys.modules:
        return  # imported whole already (a test, a bench): nothing to save
    spec = importlib.util.find_spec("uvicorn")
    if spec is None or spec.loader is None:
        return  # let the imports below fail as usual
    package = importlib.util.module_from_spec(spec)
    package.__class__ = _PackageOnDemand
    sys.modules["uvicorn"] = package


_enter_uvicorn()

# Imported after the package is entered (see the module's docstring).
from uvicorn._version import __version__  # noqa: E402
from uvicorn.config import Config  # noqa: E402
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol  # noqa: E402
from uvicorn.server import Server  # noqa: E402

_package = sys.modules["uvicorn"]
if isinstance(_package, _PackageOnDemand):
    # The names uvicorn's __init__ would give these, the same objects: uvicorn's own
    # modules import them from the package (`from uvicorn import Config` when serving).
    _package.__version__ = __version__  # type: ignore[attr-defined]
    _package.Config = Config  # type: ignore[attr-defined]
    _package.Server = Server  # type: ignore[attr-defined]

__all__ = ["STATUS_LINE", "Config", "HttpToolsProtocol", "Server"]
