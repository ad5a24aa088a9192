"""What Anthropic's Messages API rejects with HTTP 400, checked on a request body.

The fake Messages server (tests/fakes/anthropic_server.py) answers a request
that breaks one of these rules the way the API does, and records it as a
violation so the test fails: the provider must never send such a request.
Role and block rules come from tests/trajectory_validator.py (validate_anthropic);
this adds the request-level ones: max_tokens, the system shape, at most four
cache_control breakpoints, thinking configuration, and thinking blocks that
must come back exactly as the server sent them (their signatures verified).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tests.trajectory_validator import TrajectoryError, validate_anthropic

MAX_BREAKPOINTS = 4
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


@dataclass
class IssuedThinking:
    """Thinking the server streamed: what a replayed block must match."""

    signatures: dict[str, str] = field(default_factory=dict)  # signature -> thinking text
    redacted: set[str] = field(default_factory=set)  # redacted_thinking data


def request_violations(body: dict[str, Any], issued: IssuedThinking) -> list[str]:
    """Every reason the real API would refuse ``body`` (empty: it would accept it)."""
    problems: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        problems.append("max_tokens: field required (a positive integer)")
    problems.extend(_system_problems(body.get("system")))
    messages = body.get("messages")
    if not isinstance(messages, list):
        return [*problems, "messages: field required"]
    try:
        validate_anthropic(None, messages)
    except TrajectoryError as exc:
        problems.append(f"messages: {exc}")
    breakpoints = _count_cache_control(body)
    if breakpoints > MAX_BREAKPOINTS:
        problems.append(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {breakpoints}."
        )
    problems.extend(_thinking_problems(body, messages, issued))
    return problems


def _system_problems(system: Any) -> list[str]:
    if system is None or isinstance(system, str):
        return []
    if not isinstance(system, list):
        return ["system: must be a string or a list of text blocks"]
    for block in system:
        if not isinstance(block, dict) or block.get("type") != "text":
            return [f"system: invalid block {block!r}"]
        if not str(block.get("text") or "").strip():
            return ["system: text content blocks must be non-empty"]
    return []


def _count_cache_control(body: dict[str, Any]) -> int:
    count = 0
    for part in (body.get("tools"), body.get("system")):
        if isinstance(part, list):
            count += sum(1 for b in part if isinstance(b, dict) and "cache_control" in b)
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            count += sum(1 for b in content if isinstance(b, dict) and "cache_control" in b)
    return count


def _thinking_problems(
    body: dict[str, Any], messages: list[Any], issued: IssuedThinking
) -> list[str]:
    problems: list[str] = []
    thinking = body.get("thinking")
    enabled = isinstance(thinking, dict) and thinking.get("type") == "enabled"
    if enabled:
        budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
        if not isinstance(budget, int) or budget < 1024:
            problems.append("thinking.budget_tokens: must be at least 1024")
        elif isinstance(body.get("max_tokens"), int) and budget >= body["max_tokens"]:
            problems.append("max_tokens must be greater than thinking.budget_tokens")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            problems.extend(_block_problems(index, message, block, issued))
    if enabled:
        problems.extend(_last_turn_thinks(messages, issued))
    return problems


def _block_problems(
    index: int, message: dict[str, Any], block: Any, issued: IssuedThinking
) -> list[str]:
    if not isinstance(block, dict):
        return []
    kind = block.get("type")
    for key in ("id", "tool_use_id"):
        if key in block and not TOOL_USE_ID.match(str(block[key])):
            return [f"messages.{index}: {kind}.{key}: String should match pattern "
                    f"'^[a-zA-Z0-9_-]+$'"]  # fmt: skip
    if kind not in ("thinking", "redacted_thinking"):
        return []
    where = f"messages.{index}"
    if message.get("role") != "assistant":
        return [f"{where}: {kind} blocks may only be in assistant messages"]
    if "cache_control" in block:
        return [f"{where}: {kind} blocks cannot carry cache_control"]
    if kind == "redacted_thinking":
        if block.get("data") not in issued.redacted:
            return [f"{where}: redacted_thinking data was changed or was never sent"]
        return []
    signature = block.get("signature")
    if not isinstance(signature, str) or not signature:
        return [f"{where}: thinking block without a signature"]
    if issued.signatures.get(signature) != block.get("thinking"):
        return [f"{where}: Invalid `signature` in `thinking` block"]
    return []


def _last_turn_thinks(messages: list[Any], issued: IssuedThinking) -> list[str]:
    # With thinking on, a tool-use loop in progress (the request ends with the
    # results of the last assistant turn's tool_use) must replay that turn
    # starting with its thinking block, or the API cannot continue the reasoning.
    if len(messages) < 2 or not all(isinstance(m, dict) for m in messages[-2:]):
        return []
    last, previous = messages[-1], messages[-2]
    if not isinstance(last.get("content"), list) or not isinstance(previous.get("content"), list):
        return []
    if not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"]):
        return []
    blocks = [b for b in previous["content"] if isinstance(b, dict)]
    if blocks and blocks[0].get("type") not in ("thinking", "redacted_thinking"):
        return [
            "Expected `thinking` or `redacted_thinking`, but found "
            f"`{blocks[0].get('type')}`: with thinking enabled, the final assistant message "
            "must start with a thinking block"
        ]
    return []
