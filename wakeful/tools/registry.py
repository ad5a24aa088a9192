"""The built-in tools in one call: what a daemon offers before components add theirs."""

from __future__ import annotations

from collections.abc import Sequence

from wakeful.core.plan import SessionPlans
from wakeful.core.tool import Tool
from wakeful.core.tool_output import DEFAULT_OUTPUTS_MAX_BYTES
from wakeful.core.tool_registry import DEFAULT_TIMEOUT_S, ToolRegistry
from wakeful.safety.sandbox import NO_SANDBOX, Sandbox, off_result_text
from wakeful.store.base import ChannelState
from wakeful.store.memory_state import MemoryState
from wakeful.tools.clock import GetTime
from wakeful.tools.edit_file import EditFile
from wakeful.tools.fetch import FetchUrl
from wakeful.tools.files import ReadFile
from wakeful.tools.find_file import FindFile
from wakeful.tools.grep import Grep
from wakeful.tools.human import OwnerRequests, RequestHumanApproval, RequestHumanInput
from wakeful.tools.plan import UpdatePlan
from wakeful.tools.process import DEFAULT_GRACE_S
from wakeful.tools.shell import ShellExec
from wakeful.tools.tasks import CancelTask, TaskStatus
from wakeful.tools.user import ReplyToUser, SendUserNotification
from wakeful.tools.write_file import WriteFile
from wakeful.tools.written_files import WrittenFiles


def default_registry(
    *,
    default_timeout_s: float = DEFAULT_TIMEOUT_S,
    shell_grace_s: float | None = None,
    outputs_max_bytes: int = DEFAULT_OUTPUTS_MAX_BYTES,
    http_allow: Sequence[str] = (),
    sandbox: Sandbox = NO_SANDBOX,
    state: ChannelState | None = None,
    owner_requests: OwnerRequests | None = None,
) -> ToolRegistry:
    """A registry with every built-in tool, in a fixed order. ``default_timeout_s``
    is the operator's per-call limit: it also caps shell_exec's own ``timeout_s``.
    ``http_allow`` is ``[safety] http_allow``: the hosts fetch_url may reach even on a
    private or loopback address. ``sandbox``: how shell_exec's commands are confined
    (the daemon's, built once). ``state`` keeps the ledger of files the agent wrote
    across restarts (the store; None: in memory, for tests). ``owner_requests``: where
    request_human_approval / request_human_input file their questions (the daemon's
    approvals; None: the two tools are left out)."""
    registry = ToolRegistry(
        default_timeout_s=default_timeout_s, outputs_max_bytes=outputs_max_bytes
    )
    grace_s = DEFAULT_GRACE_S if shell_grace_s is None else shell_grace_s
    written = WrittenFiles(state)
    tools: list[Tool] = [
        ReplyToUser(),
        SendUserNotification(),
        GetTime(),
        ReadFile(written),
        WriteFile(written),
        EditFile(written),
        Grep(written),
        FindFile(),
        FetchUrl(http_allow=http_allow, outputs_max_bytes=outputs_max_bytes),
    ]
    if sandbox.off:
        registry.switch_off("shell_exec", off_result_text("shell_exec", str(sandbox.off_because)))
    else:
        tools.append(
            ShellExec(
                grace_s=grace_s,
                max_timeout_s=default_timeout_s,
                outputs_max_bytes=outputs_max_bytes,
                sandbox=sandbox,
            )
        )
    tools += [TaskStatus(), CancelTask(), UpdatePlan(SessionPlans(state or MemoryState()))]
    if owner_requests is not None:
        tools += [RequestHumanApproval(owner_requests), RequestHumanInput(owner_requests)]
    for tool in tools:
        registry.register(tool)
    return registry
