"""Reading the failures out of (nested) exception groups, the way task groups raise them."""

from __future__ import annotations


def leaves(exc: BaseException) -> list[BaseException]:
    """The real errors inside ``exc``: itself, or every leaf of a (nested) group."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def holds(exc: BaseException, kind: type[BaseException]) -> bool:
    """``exc`` is a ``kind``, or a group holding one."""
    return any(isinstance(leaf, kind) for leaf in leaves(exc))


def describe_failure(exc: BaseException) -> str:
    """``RuntimeError: boom`` for the innermost real errors of a (nested) group."""
    return "; ".join(f"{type(leaf).__name__}: {leaf}"[:300] for leaf in leaves(exc))
