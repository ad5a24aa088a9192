"""The tool registry: definitions for the model and one guarded way to call a tool.

``execute`` turns every failure the model can act on (unknown tool, bad
arguments, timeout, a tool's own bug) into an error result that says what went
wrong and what to try. Cancellation from the caller is never caught.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio
import structlog
from pydantic import BaseModel, ValidationError

from wakeful.core.tool import Tool, ToolContext, ToolOutput
from wakeful.core.tool_output import DEFAULT_OUTPUTS_MAX_BYTES, shape_output
from wakeful.kernel import tracing

log = structlog.get_logger(__name__)

DEFAULT_TIMEOUT_S = 60.0
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# A safety net only: tools shape their own output; this catches a tool that
# forgot, so no result can flood the context or come back empty.
_NET_LINES = 1000
_NET_CHARS = 60_000


class CallPolicy(Protocol):
    """What every call passes before and after it runs (wakeful/safety/chain.py)."""

    async def prepare(self, ctx: ToolContext) -> ToolContext: ...

    async def admit(
        self, tool: Tool, args: BaseModel, raw_arguments: str, ctx: ToolContext
    ) -> ToolOutput | None: ...

    async def observe(self, tool: Tool, output: ToolOutput, ctx: ToolContext) -> None: ...


class ToolRegistry:
    """Tools by name, in registration order (so definitions are byte-stable)."""

    def __init__(
        self,
        *,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        outputs_max_bytes: int = DEFAULT_OUTPUTS_MAX_BYTES,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self._default_timeout_s = default_timeout_s
        self._outputs_max_bytes = outputs_max_bytes
        self._definitions: dict[bool, list[dict[str, Any]]] = {}
        self._frozen = False
        self.version = 0  # counts changes after start-up (tools added to the deferred set)
        self._policy: CallPolicy | None = None
        self._call_watchers: list[CallWatcher] = []
        # Tools left out on purpose (no sandbox): name -> the result a call by name gets.
        self._off: dict[str, str] = {}

    def switch_off(self, name: str, text: str) -> None:
        """Leave ``name`` out of the tool list; a call by name gets ``text`` as its error."""
        self._off[name] = text

    def off(self) -> dict[str, str]:
        """The tools switched off, with why."""
        return dict(self._off)

    def guard_with(self, policy: CallPolicy) -> None:
        """Every call from now on passes ``policy`` (the daemon sets it once, at start)."""
        self._policy = policy

    def watch_calls(self, watcher: CallWatcher) -> None:
        """``watcher`` hears of every call of a known tool before it is validated (the
        tool surface loads a deferred tool's schema when the model calls it by name)."""
        self._call_watchers.append(watcher)

    def freeze(self) -> None:
        """No more tools: a session's tool list must not change under its prompt cache."""
        self._frozen = True

    @property
    def frozen(self) -> bool:
        return self._frozen

    def register(self, tool: Tool) -> None:
        if self._frozen:
            raise RuntimeError(
                f"tool {tool.name!r} registered after the tool list was frozen at start-up"
            )
        if not _NAME_PATTERN.match(tool.name):
            raise ValueError(f"tool name {tool.name!r} must match {_NAME_PATTERN.pattern}")
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._definitions.clear()

    def add_deferred(self, tool: Tool) -> None:
        """After the freeze: a deferred tool joins (an MCP server listed a new tool). The
        resident block and the prompt's listing stay as they were fixed; the tool is
        callable by name, search_tools finds it and a session that loads it appends its
        schema after its tail."""
        if getattr(tool, "resident", False):
            raise ValueError(f"tool {tool.name!r}: only deferred tools may join after start-up")
        frozen, self._frozen = self._frozen, False
        try:
            self.register(tool)
        finally:
            self._frozen = frozen
        self.version += 1

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def tools(self) -> list[Tool]:
        """Every tool, in registration order."""
        return list(self._tools.values())

    def definition(self, name: str) -> dict[str, Any]:
        """One tool's definition (the same bytes as its entry in :meth:`definitions`)."""
        return copy.deepcopy(_definition(self._tools[name]))

    def definitions(self, read_only: bool = False) -> list[dict[str, Any]]:
        """Tool definitions in the OpenAI tools format; ``read_only`` keeps only those."""
        if read_only not in self._definitions:
            self._definitions[read_only] = [
                _definition(tool)
                for tool in self._tools.values()
                if tool.read_only or not read_only
            ]
        # A copy, so a caller that edits its list cannot change the next prefix.
        return copy.deepcopy(self._definitions[read_only])

    async def execute(self, name: str, raw_arguments: str, ctx: ToolContext) -> ToolOutput:
        """Validate one tool call, pass it through the policy, run it; every failure
        becomes an error result."""
        return await self._execute(name, raw_arguments, ctx, checked=False)

    async def run_approved(self, name: str, raw_arguments: str, ctx: ToolContext) -> ToolOutput:
        """Run a call the owner approved: the policy already ruled on exactly these
        arguments, so it is not asked again (its result still taints)."""
        return await self._execute(name, raw_arguments, ctx, checked=True)

    async def _execute(
        self, name: str, raw_arguments: str, ctx: ToolContext, *, checked: bool
    ) -> ToolOutput:
        # The GenAI conventions' tool span: the name, the call's id and what became of
        # it (wakeful.tool.decision); never the arguments or the result.
        with tracing.tracer().span(
            f"execute_tool {name}",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": ctx.call_id,
                "gen_ai.tool.type": "function",
            },
        ) as span:
            decision, output = await self._decide_and_run(name, raw_arguments, ctx, checked)
            span.set("wakeful.tool.decision", decision)
            if output.is_error:  # error.type: the refusal's kind, or how the run failed
                ran = decision in ("allowed", "approved")
                timed_out = output.data.get("timed_out")
                span.fail("timeout" if timed_out else "tool_error" if ran else decision)
            return output

    async def _decide_and_run(
        self, name: str, raw_arguments: str, ctx: ToolContext, checked: bool
    ) -> tuple[str, ToolOutput]:
        """What became of the call (a word for its span), and its result."""
        tool = self._tools.get(name)
        if tool is None and name in self._off:
            return "switched_off", ToolOutput(self._off[name], is_error=True)
        if tool is None:
            available = ", ".join(self._tools) or "(none)"
            return "unknown_tool", ToolOutput(
                f"unknown tool {name!r}; the available tools are: {available}", is_error=True
            )
        for watcher in self._call_watchers:
            await _tell_watcher(watcher, tool, ctx)
        parsed = parse_arguments(tool, raw_arguments)
        if isinstance(parsed, ToolOutput):
            return "invalid_arguments", parsed
        if self._policy is not None:
            admitted = await self._admit(self._policy, tool, parsed, raw_arguments, ctx, checked)
            if isinstance(admitted, ToolOutput):
                return "refused", admitted
            ctx = admitted
        output = await self._run(tool, parsed, ctx)
        if self._policy is not None:
            await self._policy.observe(tool, output, ctx)
        return ("approved" if checked else "allowed"), output

    async def _admit(
        self,
        policy: CallPolicy,
        tool: Tool,
        args: BaseModel,
        raw: str,
        ctx: ToolContext,
        checked: bool,
    ) -> ToolContext | ToolOutput:
        """The context to run with (carrying the session's taint), or the result to
        give instead. ``checked``: the owner approved these arguments already."""
        try:
            ctx = await policy.prepare(ctx)
            refused = None if checked else await policy.admit(tool, args, raw, ctx)
            return ctx if refused is None else refused
        except Exception as exc:  # fail closed: a policy that cannot decide does not allow
            log.exception("safety policy failed", tool=tool.name, call_id=ctx.call_id)
            return ToolOutput(
                f"{tool.name} was not run: the safety policy could not decide "
                f"({type(exc).__name__}: {exc}). Try again later or tell the user.",
                is_error=True,
            )

    async def _run(self, tool: Tool, parsed: BaseModel, ctx: ToolContext) -> ToolOutput:
        name = tool.name
        timeout_s = tool.timeout_s if tool.timeout_s is not None else self._default_timeout_s
        # move_on_after rather than fail_after: a TimeoutError raised inside the
        # tool is then a tool failure, not mistaken for our deadline.
        with anyio.move_on_after(timeout_s):
            output = await _run_guarded(tool, parsed, ctx)
            return _safety_net(output, ctx, name, self._outputs_max_bytes)
        return ToolOutput(_timeout_text(name, timeout_s), is_error=True, data={"timed_out": True})


CallWatcher = Callable[[Tool, ToolContext], Awaitable[None]]


async def _tell_watcher(watcher: CallWatcher, tool: Tool, ctx: ToolContext) -> None:
    try:
        await watcher(tool, ctx)
    except Exception:  # a watcher's failure must not cost the call itself
        log.exception("tool call watcher failed", tool=tool.name, call_id=ctx.call_id)


def parse_arguments(tool: Tool, raw_arguments: str) -> BaseModel | ToolOutput:
    """The validated ``Args``, or an error naming what is wrong."""
    # An empty string is how some providers send "no arguments".
    text = raw_arguments if raw_arguments.strip() else "{}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return ToolOutput(
            f"arguments for {tool.name} are not valid JSON ({exc}); send one JSON object "
            f"with these fields: {_field_summary(tool)}",
            is_error=True,
        )
    if not isinstance(value, dict):
        return ToolOutput(
            f"arguments for {tool.name} must be a JSON object, got {type(value).__name__}; "
            f"fields: {_field_summary(tool)}",
            is_error=True,
        )
    try:
        validated: BaseModel = tool.Args.model_validate(value)
    except ValidationError as exc:
        return ToolOutput(_validation_text(tool, exc), is_error=True)
    return validated


async def _run_guarded(tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
    try:
        return await tool.run(args, ctx)
    except Exception as exc:  # a tool bug must not crash the loop; cancellation is not caught
        log.exception("tool_failed", tool=tool.name, call_id=ctx.call_id, session=ctx.session)
        return ToolOutput(
            f"{tool.name} failed with an unexpected error: {type(exc).__name__}: {exc}. "
            "This is a fault in the tool, not in your arguments; retrying the same call "
            "will probably fail the same way - try another approach or tell the user.",
            is_error=True,
        )


def _safety_net(
    output: ToolOutput, ctx: ToolContext, name: str, outputs_max_bytes: int
) -> ToolOutput:
    shaped = shape_output(  # also redacts the secrets the daemon knows
        output.text,
        output_dir=ctx.output_dir,
        name_hint=f"{name}-{ctx.call_id}",
        head_lines=_NET_LINES,
        tail_lines=_NET_LINES,
        max_chars=_NET_CHARS,
        outputs_max_bytes=outputs_max_bytes,
    )
    return output if shaped == output.text else dataclasses.replace(output, text=shaped)


def _timeout_text(name: str, timeout_s: float) -> str:
    return (
        f"{name} timed out after {timeout_s:g} s; the command was stopped and its result "
        "is lost (it may have partially executed - check before retrying). Try a smaller "
        "or narrower request, or split the work into steps that each finish sooner."
    )


def _validation_text(tool: Tool, exc: ValidationError) -> str:
    problems = []
    properties = _properties(tool)
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        if error["type"] == "extra_forbidden":
            allowed = ", ".join(properties) or "(none)"
            problems.append(f"- {field}: unexpected field; the allowed fields are: {allowed}")
            continue
        expected = _expected(properties.get(str(error["loc"][0]))) if error["loc"] else ""
        got = "" if error["type"] == "missing" else f" (got {json.dumps(error['input'])})"
        problems.append(f"- {field}: {error['msg']}{got}{expected}")
    return f"invalid arguments for {tool.name}:\n" + "\n".join(problems)


def _expected(schema: dict[str, Any] | None) -> str:
    if not schema:
        return ""
    text = f"; expected {_type_name(schema)}"
    if "description" in schema:
        text += f" ({schema['description']})"
    return text


def _type_name(schema: dict[str, Any]) -> str:
    options = schema.get("anyOf", [schema])
    kinds = [str(s["type"]) for s in options if isinstance(s, dict) and "type" in s]
    return " or ".join(kinds) or "any JSON value"


def _field_summary(tool: Tool) -> str:
    required = set(_schema(tool).get("required", []))
    parts = [
        f"{field} ({_type_name(schema)}{', required' if field in required else ''})"
        for field, schema in _properties(tool).items()
    ]
    return ", ".join(parts) or "(no fields)"


def _properties(tool: Tool) -> dict[str, Any]:
    properties = _schema(tool).get("properties", {})
    return properties if isinstance(properties, dict) else {}


def _schema(tool: Tool) -> dict[str, Any]:
    """The JSON schema of the tool's arguments (definitions are built once and cached)."""
    schema: dict[str, Any] = tool.Args.model_json_schema()
    return schema


def _definition(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": _without_titles(_schema(tool)),
        },
    }


def _without_titles(schema: Any) -> Any:
    """Drop pydantic's generated "title" keys: noise for the model, and tokens."""
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            # Keys here are field names, which may well be "title".
            cleaned[key] = {name: _without_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _without_titles(value)
    return cleaned
