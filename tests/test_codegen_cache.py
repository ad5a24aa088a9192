"""The cache of code the standard library generates (wakeful/kernel/codegen_cache.py).

The promise: a class built from cached code behaves exactly as one built by the
standard library alone, and the cache is kept like bytecode (written once where
bytecode goes, never when Python writes none, a damaged file ignored).
"""

from __future__ import annotations

import contextlib
import dataclasses
import keyword
import os
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.daemon_process import DaemonProcess, free_port, write_config
from wakeful.kernel import codegen_cache
from wakeful.kernel.codegen_cache import MAGIC, CodegenCache

REPO = Path(__file__).resolve().parent.parent


# -- in this process: the cache in front of dataclasses and typing ---------------------


names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)
)
specs = st.fixed_dictionaries(
    {
        "fields": st.lists(st.tuples(names, st.sampled_from(["int", "str", "list"])), max_size=6)
        .map(lambda fs: list({n: t for n, t in fs}.items()))
        .filter(lambda fs: len(fs) > 0),
        "defaults": st.integers(min_value=0, max_value=6),
        "frozen": st.booleans(),
        "order": st.booleans(),
        "slots": st.booleans(),
    }
)
TYPES: dict[str, type] = {"int": int, "str": str, "list": list}
SAMPLES: dict[str, Callable[[int], Any]] = {"int": lambda i: i, "str": str, "list": lambda i: [i]}


def build(spec: dict[str, Any]) -> type:
    """The spec's dataclass; the last ``defaults`` fields get defaults (a list: a factory)."""
    fields: list[tuple[str, type, Any]] = []
    first_default = max(0, len(spec["fields"]) - spec["defaults"])
    for i, (name, kind) in enumerate(spec["fields"]):
        if i < first_default:
            fields.append((name, TYPES[kind], dataclasses.field()))
        elif kind == "list":
            fields.append((name, list, dataclasses.field(default_factory=list)))
        else:
            fields.append((name, TYPES[kind], dataclasses.field(default=SAMPLES[kind](7))))
    return dataclasses.make_dataclass(
        "Generated",
        fields,
        frozen=spec["frozen"],
        order=spec["order"],
        slots=spec["slots"],
    )


def behaviour(cls: type, spec: dict[str, Any]) -> list[Any]:
    """What a user of the class can observe: construction, defaults, repr, comparison,
    hashing and (frozen) refusal to change; an exception is an observation too."""
    args = [SAMPLES[kind](i) for i, (_, kind) in enumerate(spec["fields"])]
    one, two = cls(*args), cls(*args)
    first_default = max(0, len(spec["fields"]) - spec["defaults"])
    checks: list[Callable[[], Any]] = [
        lambda: repr(one),
        lambda: one == two,
        lambda: one != cls(*[SAMPLES["list"](9)] * len(args)),
        lambda: repr(cls(*args[:first_default])),
        lambda: cls.__hash__ is None or hash(one) == hash(two),
        lambda: one <= two,
        lambda: setattr(one, spec["fields"][0][0], None),
        lambda: cls(*args, *args),
    ]
    seen: list[Any] = []
    for check in checks:
        try:
            seen.append(check())
        except Exception as exc:
            seen.append((type(exc).__name__, str(exc)))
    return seen


@settings(max_examples=60, deadline=None)
@given(spec=specs)
def test_a_class_from_cached_code_behaves_as_one_the_standard_library_builds(
    spec: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Invariant: for any dataclass, compiled afresh (a miss), read back from the file
    a previous process wrote (a hit), or built with no cache at all, the same behaviour."""
    plain = behaviour(build(spec), spec)
    path = tmp_path_factory.mktemp("codegen") / "codegen.marshal"
    # Written as by a process that writes bytecode (the test may run with
    # PYTHONDONTWRITEBYTECODE, which the cache honours: the test below).
    writes_bytecode = mock.patch.object(sys, "dont_write_bytecode", False)
    cold = CodegenCache.load(path)
    with in_front(cold):
        missed = behaviour(build(spec), spec)
    assert cold.misses > 0 and cold.hits == 0
    with writes_bytecode:
        cold.save()
    warm = CodegenCache.load(path)
    with in_front(warm):
        hit = behaviour(build(spec), spec)
    assert warm.misses == 0 and warm.hits == cold.misses
    assert plain == missed == hit


@contextlib.contextmanager
def in_front(cache: CodegenCache) -> Iterator[None]:
    """The cache in front of the two modules for one block, as install() puts it."""
    codegen_cache.attach(cache)
    try:
        yield
    finally:
        codegen_cache.detach()


def test_cached_code_is_the_code_the_compiler_gives(tmp_path: Path) -> None:
    """Compiled with no __future__ flags, as dataclasses' own exec compiles: this module's
    ``from __future__ import annotations`` must not turn the generated annotations
    into strings."""
    cache = CodegenCache.load(tmp_path / "c.marshal")
    source = "def __create_fn__(_type):\n def f(x: _type) -> _type:\n  return x\n return f"
    assert cache.code(source, "<string>", "exec") == compile(source, "<string>", "exec", 0, True)
    namespace: dict[str, Any] = {}
    cache.exec(source, {}, namespace)
    assert namespace["__create_fn__"](int).__annotations__ == {"x": int, "return": int}


def test_forward_references_resolve_through_the_cache(tmp_path: Path) -> None:
    cache = CodegenCache.load(tmp_path / "c.marshal")
    with in_front(cache):
        hints = typing.get_type_hints(_Annotated)
    assert hints == {"count": int, "names": list[str]}
    assert cache.misses == 2  # "int" and "list[str]", compiled by ForwardRef


@dataclasses.dataclass
class _Annotated:
    count: int
    names: list[str]


def test_a_damaged_or_foreign_file_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.marshal"
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    for damaged in (b"", b"garbage", MAGIC + b"\x00truncated", b"\x00\x00\r\n" + b"x" * 40):
        path.write_bytes(damaged)
        cache = CodegenCache.load(path)
        cache.code("1 + 1", "<string>", "eval")
        assert cache.misses == 1
        cache.save()
        assert path.read_bytes().startswith(MAGIC)
        reread = CodegenCache.load(path)
        assert reread.code("1 + 1", "<string>", "eval") == compile(
            "1 + 1", "<string>", "eval", 0, True
        )
        assert reread.hits == 1


def test_nothing_is_written_when_python_writes_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache = CodegenCache.load(tmp_path / "c.marshal")
    cache.code("2", "<string>", "eval")
    cache.save()
    assert not (tmp_path / "c.marshal").exists()


def test_the_file_goes_to_the_systemd_cache_directory_else_beside_the_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CACHE_DIRECTORY", str(tmp_path / "cache"))
    tag = sys.implementation.cache_tag
    expected = tmp_path / "cache" / f"codegen-daemon.{tag}.marshal"
    assert codegen_cache.default_path("daemon") == expected
    monkeypatch.delenv("CACHE_DIRECTORY")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pyc"))
    beside = codegen_cache.default_path("client")
    assert beside is not None and beside.is_relative_to(tmp_path / "pyc")
    assert beside.name == f"codegen-client.{tag}.marshal"


# -- the wakeful command: written once, then only read ---------------------------------


def _command_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.pop("CACHE_DIRECTORY", None)
    return {**env, "PYTHONPYCACHEPREFIX": str(tmp_path / "pyc"), **extra}


def _written(root: Path, role: str) -> list[Path]:
    return sorted(root.rglob(f"codegen-{role}.*.marshal"))


def test_a_client_command_writes_its_cache_once_then_reads_it(tmp_path: Path) -> None:
    env = _command_env(tmp_path)
    command = [sys.executable, "-m", "wakeful", "--help"]
    assert subprocess.run(command, env=env, capture_output=True, timeout=60).returncode == 0
    [path] = _written(tmp_path / "pyc", "client")
    first = path.stat()
    assert subprocess.run(command, env=env, capture_output=True, timeout=60).returncode == 0
    again = path.stat()
    # Nothing new was compiled the second time, so the file was not rewritten.
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)


def test_with_pythondontwritebytecode_the_command_writes_no_cache(tmp_path: Path) -> None:
    env = _command_env(tmp_path, PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "wakeful", "--help"]
    assert subprocess.run(command, env=env, capture_output=True, timeout=60).returncode == 0
    assert _written(tmp_path, "client") == []


def test_the_daemon_writes_its_cache_once_serving_not_at_exit(tmp_path: Path) -> None:
    """``wakeful run`` leaves by os._exit, past atexit: the file must exist while it
    serves, in $CACHE_DIRECTORY when systemd gives one (the system unit's CacheDirectory=)."""
    cache_dir = tmp_path / "cache"
    port = free_port()
    config = write_config(tmp_path / "data", None, port)
    env = _command_env(tmp_path, CACHE_DIRECTORY=str(cache_dir))
    with DaemonProcess(config, port, env=env):  # returns once "wakeful is listening"
        assert _written(cache_dir, "daemon") != []
    assert _written(tmp_path / "pyc", "daemon") == []


def test_finish_writes_the_file_and_steps_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "c.marshal"
    cache = codegen_cache.install("test", path)
    try:
        assert dataclasses.__dict__.get("exec") == cache.exec
        dataclasses.make_dataclass("Made", [("x", int)], frozen=True)
        assert cache.misses > 0
    finally:
        codegen_cache.finish()
    assert "exec" not in dataclasses.__dict__ and "compile" not in typing.__dict__
    reread = CodegenCache.load(path)
    with in_front(reread):
        dataclasses.make_dataclass("Made", [("x", int)], frozen=True)
    assert reread.misses == 0 and reread.hits == cache.misses
