"""Tests for the tool registry: definitions, argument validation and guarded execution."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.core.tool_registry import ToolRegistry
from wakeful.tools.registry import default_registry


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return ToolContext(
        session="s",
        call_id="call_1",
        workspace=workspace,
        output_dir=tmp_path / "out",
        tasks=CombinedTaskView([]),
        outbox=None,  # type: ignore[arg-type]  # these tools never talk to the user
    )


class _EmptyArgs(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class _FakeTool:
    """A tool whose behaviour the test chooses: sleep, raise, or return text."""

    description = "test tool"
    Args = _EmptyArgs
    read_only = True

    def __init__(
        self, name: str, *, text: str = "ok", sleep_s: float = 0.0, error: Exception | None = None
    ) -> None:
        self.name = name
        self.timeout_s: float | None = None
        self._text, self._sleep_s, self._error = text, sleep_s, error
        self.finished = False

    async def run(self, args: _EmptyArgs, ctx: ToolContext) -> ToolOutput:
        await anyio.sleep(self._sleep_s)
        if self._error is not None:
            raise self._error
        self.finished = True
        return ToolOutput(self._text)


def test_definitions_are_byte_stable() -> None:
    """Two calls, and a call after the caller edited a previous result, serialize identically."""
    registry = default_registry()
    first = json.dumps(registry.definitions())
    edited = registry.definitions()
    edited[0]["function"]["description"] = "changed"
    edited.pop()
    assert json.dumps(registry.definitions()) == first
    assert json.dumps(default_registry().definitions()) == first


def test_definitions_use_the_openai_tools_format_without_titles() -> None:
    """Each definition has type, name, description and a title-free JSON schema."""
    for definition in default_registry().definitions():
        assert definition["type"] == "function"
        function = definition["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert function["parameters"]["type"] == "object"
        assert '"title"' not in json.dumps(function["parameters"])


def test_read_only_definitions_leave_out_tools_with_effects() -> None:
    """read_only=True keeps the reading tools, get_time, the two messages to the user and
    task_status."""
    registry = default_registry()
    names = [d["function"]["name"] for d in registry.definitions(read_only=True)]
    assert names == [
        "reply_to_user",
        "send_user_notification",
        "get_time",
        "read_file",
        "grep",
        "find_file",
        "task_status",
    ]
    assert "shell_exec" in registry.names()


def test_duplicate_names_are_rejected() -> None:
    """Registering two tools with one name is a programming error."""
    registry = ToolRegistry()
    registry.register(_FakeTool("a"))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(_FakeTool("a"))


@pytest.mark.anyio
async def test_unknown_tool_lists_the_available_names(ctx: ToolContext) -> None:
    """Calling a name that does not exist returns an error naming the real tools."""
    out = await default_registry().execute("shell", "{}", ctx)
    assert out.is_error
    assert "unknown tool 'shell'" in out.text
    assert "shell_exec" in out.text and "read_file" in out.text


@pytest.mark.anyio
async def test_invalid_json_is_reported_with_the_fields(ctx: ToolContext) -> None:
    """Arguments that are not JSON produce an error describing the expected fields."""
    out = await default_registry().execute("shell_exec", '{"command": "ls"', ctx)
    assert out.is_error
    assert "not valid JSON" in out.text
    assert "command (string, required)" in out.text


@pytest.mark.anyio
async def test_non_object_json_is_rejected(ctx: ToolContext) -> None:
    """A JSON array is not an arguments object."""
    out = await default_registry().execute("get_time", "[1]", ctx)
    assert out.is_error
    assert "must be a JSON object" in out.text


@pytest.mark.anyio
async def test_wrong_type_names_the_field_and_expected_type(ctx: ToolContext) -> None:
    """A number where a string belongs is named with what was expected."""
    out = await default_registry().execute("shell_exec", '{"command": 5}', ctx)
    assert out.is_error
    assert "- command:" in out.text
    assert "expected string" in out.text
    assert "(got 5)" in out.text


@pytest.mark.anyio
async def test_numeric_strings_are_not_silently_coerced(ctx: ToolContext) -> None:
    """ "5" for an integer field is an error, not quietly turned into 5."""
    raw = '{"path": "x", "limit": "5"}'
    out = await default_registry().execute("read_file", raw, ctx)
    assert out.is_error
    assert "- limit:" in out.text and "expected integer" in out.text


@pytest.mark.anyio
async def test_missing_field_is_named(ctx: ToolContext) -> None:
    """Leaving out a required field says which one."""
    out = await default_registry().execute("read_file", "{}", ctx)
    assert out.is_error
    assert "- path: Field required" in out.text


@pytest.mark.anyio
async def test_unexpected_field_is_rejected_with_the_allowed_ones(ctx: ToolContext) -> None:
    """An argument the tool does not define is an error listing the real fields."""
    out = await default_registry().execute("get_time", '{"tz": "UTC"}', ctx)
    assert out.is_error
    assert "- tz: unexpected field" in out.text
    assert "timezone" in out.text


@pytest.mark.anyio
async def test_empty_arguments_mean_no_arguments(ctx: ToolContext) -> None:
    """An empty arguments string is treated as an empty object."""
    out = await default_registry().execute("get_time", "", ctx)
    assert not out.is_error
    assert "UTC" in out.text


@pytest.mark.anyio
async def test_timeout_stops_the_call_and_says_so(ctx: ToolContext) -> None:
    """A tool running past its timeout is cancelled and an error names the limit."""
    registry = ToolRegistry()
    slow = _FakeTool("slow", sleep_s=30)
    slow.timeout_s = 0.2
    registry.register(slow)
    started = time.monotonic()
    out = await registry.execute("slow", "{}", ctx)
    assert out.is_error
    assert out.text.startswith("slow timed out after 0.2 s; the command was stopped")
    assert time.monotonic() - started < 2
    assert not slow.finished


@pytest.mark.anyio
async def test_registry_default_timeout_applies(ctx: ToolContext) -> None:
    """A tool without its own timeout gets the registry default."""
    registry = ToolRegistry(default_timeout_s=0.1)
    registry.register(_FakeTool("slow", sleep_s=30))
    out = await registry.execute("slow", "{}", ctx)
    assert "timed out after 0.1 s" in out.text


@pytest.mark.anyio
async def test_tool_exception_becomes_an_error_result(ctx: ToolContext) -> None:
    """A bug inside a tool is reported by exception name instead of crashing the caller."""
    registry = ToolRegistry()
    registry.register(_FakeTool("boom", error=KeyError("missing-key")))
    out = await registry.execute("boom", "{}", ctx)
    assert out.is_error
    assert "KeyError" in out.text and "missing-key" in out.text


@pytest.mark.anyio
async def test_timeout_error_from_inside_a_tool_is_not_our_timeout(ctx: ToolContext) -> None:
    """A TimeoutError the tool raises itself is a tool failure, not the call's deadline."""
    registry = ToolRegistry()
    registry.register(_FakeTool("net", error=TimeoutError("socket read")))
    out = await registry.execute("net", "{}", ctx)
    assert "unexpected error: TimeoutError: socket read" in out.text


@pytest.mark.anyio
async def test_caller_cancellation_propagates(ctx: ToolContext) -> None:
    """Cancelling the caller's scope cancels the tool; execute does not return a result."""
    registry = ToolRegistry()
    slow = _FakeTool("slow", sleep_s=30)
    registry.register(slow)
    returned = False
    with anyio.move_on_after(0.1) as scope:
        await registry.execute("slow", "{}", ctx)
        returned = True
    assert scope.cancelled_caught
    assert not returned and not slow.finished


@pytest.mark.anyio
async def test_empty_tool_output_becomes_a_note(ctx: ToolContext) -> None:
    """A tool that returns empty text still gives the model a non-empty result."""
    registry = ToolRegistry()
    registry.register(_FakeTool("quiet", text=""))
    out = await registry.execute("quiet", "{}", ctx)
    assert out.text == "(no output)"


@pytest.mark.anyio
async def test_independent_calls_run_concurrently(ctx: ToolContext) -> None:
    """Two `sleep 1` shell calls in one task group take about 1 s, not 2 s."""
    registry = default_registry()
    outputs: list[ToolOutput] = []

    async def call() -> None:
        outputs.append(await registry.execute("shell_exec", '{"command": "sleep 1"}', ctx))

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        tg.start_soon(call)
    assert time.monotonic() - started < 1.8
    assert [o.text.startswith("exit status 0") for o in outputs] == [True, True]
