"""A webhook subscription's payload conditions: checked when subscribing, tested per delivery.

Both the subscription's own route and a filter on a configured hook use them.
"""

from __future__ import annotations

import re
from typing import Any

from wakeful.sources.subscriptions.kinds.base import Refusal
from wakeful.sources.subscriptions.request import ConnectRequest
from wakeful.sources.webhook.mapping import display, is_missing, lookup


def checked_conditions(request: ConnectRequest) -> list[dict[str, Any]]:
    """The request's payload conditions as stored, or :class:`Refusal` naming the bad one."""
    conditions = []
    for n, condition in enumerate(request.conditions):
        where = f"conditions[{n}]"
        if (condition.equals is None) == (condition.pattern is None):
            raise Refusal(
                f"{where}: give exactly one of equals or pattern, e.g. "
                '{"field": "build.status", "equals": "failed"}'
            )
        if condition.pattern is not None:
            try:
                re.compile(condition.pattern)
            except re.error as exc:
                raise Refusal(f"{where}.pattern: not a valid regular expression ({exc})") from None
        conditions.append(condition.model_dump(exclude_none=True))
    return conditions


def rejects(conditions: list[dict[str, Any]], payload: Any) -> str | None:
    for condition in conditions:
        value = lookup(payload, condition["field"])
        if is_missing(value):
            return f"field {condition['field']!r} is missing"
        if "pattern" in condition:
            passes = isinstance(value, str) and re.search(condition["pattern"], value) is not None
        else:
            expected = condition["equals"]
            passes = (
                value is expected
                if isinstance(value, bool) or isinstance(expected, bool)
                else value == expected
            )
        if not passes:
            return f"field {condition['field']!r} = {display(value)} does not pass the filter"
    return None
