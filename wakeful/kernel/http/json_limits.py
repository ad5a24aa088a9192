"""JSON from strangers: bounded nesting, bounded numbers, no NaN or Infinity.

``json.loads`` alone turns a 100k-deep body into a RecursionError and a
100k-digit number into a ValueError (both were 500s with a traceback) and
accepts ``NaN``, ``Infinity`` and ``1e999999`` (inf), which no JSON peer
can send back. :func:`loads_limited` refuses each with a message naming the
limit. The checks run on the parsed value in one pass, so the C parser keeps
its fast paths (custom ``parse_int``/``parse_float`` hooks would lose them).
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64
MAX_NUMBER_DIGITS = 100
_INT_BOUND = 10**MAX_NUMBER_DIGITS


class JsonRefused(ValueError):
    """The body is not JSON we accept; the message says why (answered with 400)."""


def _no_constants(name: str) -> Any:
    raise JsonRefused(f"{name} is not allowed in JSON bodies; send a finite number or null")


# Built once: json.loads with any keyword builds a new decoder per call (~6 us).
_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def loads_limited(raw: bytes | str) -> Any:
    try:
        text = raw if isinstance(raw, str) else raw.decode(json.detect_encoding(raw))
        value = _DECODER.decode(text)
    except RecursionError:
        raise JsonRefused(_too_deep()) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise JsonRefused(f"body is not valid JSON: {exc}") from None
    except JsonRefused:
        raise
    except ValueError:  # int() past sys.get_int_max_str_digits()
        raise JsonRefused(_too_long()) from None
    _check(value)
    return value


def _check(value: Any) -> None:
    """Level by level (no recursion); exact type checks, since json only builds these."""
    level = [value]
    depth = 0
    while level:
        depth += 1
        containers = []
        for item in level:
            kind = type(item)
            if kind is dict or kind is list:
                containers.append(item)
            elif kind is float:
                if not math.isfinite(item):
                    raise JsonRefused(_out_of_range())
            elif kind is int and not -_INT_BOUND < item < _INT_BOUND:
                raise JsonRefused(_too_long())
        if containers and depth > MAX_DEPTH:
            raise JsonRefused(_too_deep())
        level = [
            child
            for container in containers
            for child in (container.values() if type(container) is dict else container)
        ]


def _out_of_range() -> str:
    return "a number in the body is out of range (it overflows a double)"


def _too_deep() -> str:
    return f"body is nested deeper than the limit of {MAX_DEPTH} levels"


def _too_long() -> str:
    return f"a number in the body has more than the limit of {MAX_NUMBER_DIGITS} digits"
