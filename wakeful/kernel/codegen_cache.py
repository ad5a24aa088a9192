"""Code that the standard library generates at import, compiled once and kept like bytecode.

Python caches the bytecode of modules, but not the source text that
``dataclasses`` writes for every class (``__init__``, ``__repr__``, ``__eq__``,
and for a frozen one ``__setattr__``, ``__delattr__`` and ``__hash__``, each
parsed and compiled by ``exec``), nor the annotations ``typing.ForwardRef``
compiles (every ``from __future__ import annotations`` field that pydantic
evaluates). On the daemon's way to READY that is ~900 ``exec`` and ~1,400
``compile`` calls: about a fifth of start-up spent in Python's parser and
compiler producing the same code as last time.

:func:`install` puts a cache in front of those two calls: the text is the key,
the compiled code object the value, kept between runs as one ``marshal`` file.
It changes what the code *is* in no way: a hit hands ``exec`` the code object
that compiling the same text with the same flags gives (the two modules hold
no ``__future__`` flags, so the code is compiled with none, as theirs is), and
every other call goes straight to the builtin.

The file lives where bytecode does, by the same rules: ``$CACHE_DIRECTORY``
under systemd (the unit's ``CacheDirectory=``, since the installed package is
read-only there), else beside the package's own ``__pycache__`` (or under
``PYTHONPYCACHEPREFIX``); it is not written when Python writes no bytecode
(``PYTHONDONTWRITEBYTECODE``) or cannot write there, and a file from another
Python version, or a damaged one, is ignored and replaced.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import importlib.util
import marshal
import os
import sys
import typing
from pathlib import Path
from types import CodeType
from typing import Any

# The interpreter's bytecode version: a file written by another one is not read.
MAGIC = importlib.util.MAGIC_NUMBER
# A file that has gathered this many entries (code changed across many upgrades)
# is rewritten with only those this process used.
MAX_ENTRIES = 20_000

Key = tuple[str, str, str]  # (mode, filename, source)

_compile = builtins.compile
_exec = builtins.exec


class CodegenCache:
    """Compiled code by source text; :meth:`save` writes it back if anything was added."""

    def __init__(self, path: Path | None, entries: dict[Key, CodeType]) -> None:
        self.path = path
        self._entries = entries
        self._used: set[Key] = set()
        self.hits = 0
        self.misses = 0
        self._saved_misses = 0

    @classmethod
    def load(cls, path: Path | None) -> CodegenCache:
        return cls(path, _read(path) if path is not None else {})

    def code(self, source: str, filename: str, mode: str) -> CodeType:
        key = (mode, filename, source)
        self._used.add(key)
        found = self._entries.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        # dont_inherit: compiled with no __future__ flags, as dataclasses' and typing's
        # own calls are (neither module has any), whatever this module's are.
        code: CodeType = _compile(source, filename, mode, 0, True)
        self._entries[key] = code
        return code

    def exec(
        self, source: Any, globals: dict[str, Any] | None = None, locals: Any = None, /
    ) -> None:
        """``exec`` for ``dataclasses``: the same call, with its text compiled once."""
        if isinstance(source, str):
            source = self.code(source, "<string>", "exec")
        _exec(source, globals, locals)

    def compile(
        self,
        source: Any,
        filename: Any,
        mode: str,
        flags: int = 0,
        dont_inherit: bool = False,
        optimize: int = -1,
    ) -> Any:
        """``compile`` for ``typing`` (a forward reference's expression)."""
        if isinstance(source, str) and isinstance(filename, str) and not flags and optimize == -1:
            return self.code(source, filename, mode)
        return _compile(source, filename, mode, flags, dont_inherit, optimize)

    def save(self) -> None:
        """Writes the file if this process compiled anything new; never raises."""
        if self.path is None or self.misses == self._saved_misses or sys.dont_write_bytecode:
            return
        self._saved_misses = self.misses
        entries = dict(self._entries)  # one C-level copy: another thread may be adding
        if len(entries) > MAX_ENTRIES:
            entries = {key: entries[key] for key in list(self._used) if key in entries}
        with contextlib.suppress(OSError, ValueError):
            _write(self.path, entries)


def _read(path: Path) -> dict[Key, CodeType]:
    try:
        raw = path.read_bytes()
    except OSError:
        return {}
    if raw[: len(MAGIC)] != MAGIC:
        return {}
    try:
        entries = marshal.loads(raw[len(MAGIC) :])
    except (EOFError, ValueError, TypeError):
        return {}
    return entries if isinstance(entries, dict) else {}


def _write(path: Path, entries: dict[Key, CodeType]) -> None:
    """Atomically, as importlib writes bytecode: two processes starting at once both
    write whole files, and the last rename wins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        scratch.write_bytes(MAGIC + marshal.dumps(entries))
        os.replace(scratch, path)
    finally:
        with contextlib.suppress(OSError):
            scratch.unlink()


def default_path(role: str) -> Path | None:
    """``$CACHE_DIRECTORY`` (systemd), else where this package's bytecode goes.

    ``role``: one file per kind of process (the daemon, a client command), each
    holding what that kind compiles: a client command does not read the daemon's."""
    # With asserts compiled out the code differs: another file, as for .opt-N.pyc.
    optimized = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    name = f"codegen-{role}.{sys.implementation.cache_tag}{optimized}.marshal"
    cache_dir = os.environ.get("CACHE_DIRECTORY", "").split(":")[0]
    if cache_dir:
        return Path(cache_dir) / name
    package = Path(__file__).resolve().parent.parent
    try:
        bytecode = Path(importlib.util.cache_from_source(str(package / "__init__.py")))
    except NotImplementedError:  # an interpreter that caches no bytecode
        return None
    return bytecode.parent / name


_installed: CodegenCache | None = None


def install(role: str, path: Path | None = None) -> CodegenCache:
    """The cache, in front of ``dataclasses``' ``exec`` and ``typing``'s ``compile``.

    Called first thing by the ``wakeful`` command, before the imports that define
    classes; once per process. ``path``: the file (default :func:`default_path`).
    """
    global _installed
    if _installed is None:
        _installed = CodegenCache.load(path if path is not None else default_path(role))
        attach(_installed)
        atexit.register(_installed.save)
    return _installed


def attach(cache: CodegenCache) -> None:
    """``cache`` in front of the two modules' calls: module globals shadow the
    builtins for those modules' own calls only."""
    setattr(dataclasses, "exec", cache.exec)  # noqa: B010
    setattr(typing, "compile", cache.compile)  # noqa: B010


def detach() -> None:
    """The two modules call the builtins again."""
    dataclasses.__dict__.pop("exec", None)
    typing.__dict__.pop("compile", None)


def finish() -> None:
    """Start-up is over: writes what it compiled and steps aside, freeing the entries
    (~1 MiB a long-running daemon has no more use for). The daemon calls it once
    serving: it leaves by ``os._exit``, past ``atexit``."""
    global _installed
    if _installed is not None:
        _installed.save()
        atexit.unregister(_installed.save)
        detach()
        _installed = None
