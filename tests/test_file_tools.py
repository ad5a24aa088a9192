"""The file tools through the real registry: confined to the workspace (saved outputs
read-only), what they write and edit, what grep and find_file show, and the ledger
that taints reads of files the agent did not write, kept in the store."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.model_replies import Reply, ToolCallSpec, text_reply
from tests.fakes.model_server import FakeModelServer
from tests.test_handlers_tools import FakeTasks, RecordingOutbox
from wakeful.core.effects import Reach
from wakeful.core.taint import Taint, TaintSource
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.core.tool_registry import ToolRegistry
from wakeful.store.sqlite import SqliteStore
from wakeful.tools.registry import default_registry
from wakeful.tools.written_files import digest

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def context(data_dir: Path, *, taint: Taint | None = None) -> ToolContext:
    """A context laid out as the daemon lays it out: workspace and outputs in data_dir."""
    workspace = data_dir / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (data_dir / "outputs").mkdir(exist_ok=True)
    return ToolContext(
        session="s",
        call_id="call_1",
        workspace=workspace,
        output_dir=data_dir / "outputs",
        tasks=FakeTasks({}),
        outbox=RecordingOutbox([]),
        taint=taint,
    )


async def call(registry: ToolRegistry, ctx: ToolContext, tool: str, **args: Any) -> ToolOutput:
    return await registry.execute(tool, json.dumps(args), ctx)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return context(tmp_path / "data")


@pytest.fixture
def tools() -> ToolRegistry:
    return default_registry()


def assert_refused(out: ToolOutput, given: str, resolved: Path | str) -> None:
    """One line naming the path, where it resolved and the fix."""
    assert out.is_error, out.text
    assert "refused" in out.text and given in out.text, out.text
    assert f"resolves to {resolved}," in out.text, out.text
    assert "Use a path relative to the workspace" in out.text
    assert len(out.text.splitlines()) == 1


# --- confinement --------------------------------------------------------------------


async def test_read_file_refuses_system_files_and_escapes(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    out = await call(tools, ctx, "read_file", path="/etc/shadow")
    assert_refused(out, "/etc/shadow", "/etc/shadow")
    given = "../../../etc/passwd"
    out = await call(tools, ctx, "read_file", path=given)
    assert_refused(out, given, (ctx.workspace / given).resolve())
    deep = "../" * 40 + "etc/passwd"  # enough to reach / from any workspace
    out = await call(tools, ctx, "read_file", path=deep)
    assert_refused(out, deep, "/etc/passwd")
    assert "root:" not in out.text


async def test_read_file_refuses_symlinks_that_lead_out(
    tools: ToolRegistry, ctx: ToolContext, tmp_path: Path
) -> None:
    """A link to a file, a link to /etc, and a symlinked parent directory: each is
    resolved before the check, so none of them reads what lies outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the outside secret\n")
    (ctx.workspace / "passwd").symlink_to("/etc/passwd")
    (ctx.workspace / "etc").symlink_to("/etc")
    (ctx.workspace / "notes").symlink_to(outside)
    out = await call(tools, ctx, "read_file", path="passwd")
    assert_refused(out, "passwd", "/etc/passwd")
    out = await call(tools, ctx, "read_file", path="etc/hostname")
    assert_refused(out, "etc/hostname", "/etc/hostname")
    out = await call(tools, ctx, "read_file", path="notes/secret.txt")
    assert_refused(out, "notes/secret.txt", outside / "secret.txt")
    assert "outside secret" not in out.text


async def test_read_file_refuses_the_admin_token_beside_the_workspace(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    ctx = context(data_dir)
    token = data_dir / "admin-token"
    token.write_text("admin-token-value-123\n")
    for given in ("../admin-token", str(token), "~/../admin-token"):
        out = await call(tools, ctx, "read_file", path=given)
        assert_refused(out, given, token)
        assert "admin-token-value" not in out.text


async def test_read_file_reads_a_saved_output_as_the_agents_own(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    """Full outputs other tools saved are readable by absolute path and do not taint."""
    await call(tools, ctx, "shell_exec", command="seq 1 5000")
    [saved] = list(ctx.output_dir.iterdir())
    out = await call(tools, ctx, "read_file", path=str(saved), offset=10, limit=2)
    assert out.text.splitlines()[:2] == ["    11\t11", "    12\t12"]
    assert out.untrusted_source is None


async def test_saved_outputs_are_read_only(tools: ToolRegistry, ctx: ToolContext) -> None:
    saved = ctx.output_dir / "shell-1.txt"
    saved.write_text("output\n")
    out = await call(tools, ctx, "write_file", path=str(saved), content="changed\n")
    assert_refused(out, str(saved), saved.resolve())
    out = await call(tools, ctx, "edit_file", path=str(saved), old_text="output", new_text="x")
    assert_refused(out, str(saved), saved.resolve())
    assert saved.read_text() == "output\n"


# --- write_file --------------------------------------------------------------------


async def test_write_file_creates_parents_and_says_what_it_wrote(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    out = await call(tools, ctx, "write_file", path="notes/2024/todo.md", content="a\nb\nc")
    assert not out.is_error, out.text
    assert out.text == "wrote 5 bytes, 3 lines to notes/2024/todo.md: created"
    assert (ctx.workspace / "notes/2024/todo.md").read_text() == "a\nb\nc"
    out = await call(tools, ctx, "write_file", path="notes/2024/todo.md", content="é\n")
    assert out.text == "wrote 3 bytes, 1 lines to notes/2024/todo.md: replaced (was 5 bytes)"
    assert sorted(p.name for p in (ctx.workspace / "notes/2024").iterdir()) == ["todo.md"]


async def test_write_file_replaces_atomically_and_keeps_permissions(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    """A reader that opened the old file keeps reading the old content (a new file was
    renamed over it, never truncated in place); the file's mode survives."""
    script = ctx.workspace / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o751)
    with script.open() as reader:
        out = await call(tools, ctx, "write_file", path="run.sh", content="echo new\n")
        assert not out.is_error, out.text
        assert reader.read() == "echo old\n"
    assert script.read_text() == "echo new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751


async def test_write_file_refuses_paths_outside_and_links_out(
    tools: ToolRegistry, ctx: ToolContext, tmp_path: Path
) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("untouched\n")
    (ctx.workspace / "link.txt").symlink_to(target)
    (ctx.workspace / "out").symlink_to(tmp_path)
    for given, resolved in (
        ("link.txt", target),
        ("out/outside.txt", target),
        ("out/new.txt", tmp_path / "new.txt"),
        ("../../outside.txt", target),
        (str(target), target),
    ):
        out = await call(tools, ctx, "write_file", path=given, content="pwned\n")
        assert_refused(out, given, resolved)
    assert target.read_text() == "untouched\n"
    assert not (tmp_path / "new.txt").exists()


async def test_write_file_writes_through_a_link_that_stays_inside(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    (ctx.workspace / "real.txt").write_text("old\n")
    (ctx.workspace / "alias.txt").symlink_to("real.txt")
    out = await call(tools, ctx, "write_file", path="alias.txt", content="new\n")
    assert out.text.endswith("to real.txt: replaced (was 4 bytes)"), out.text
    assert (ctx.workspace / "alias.txt").is_symlink()
    assert (ctx.workspace / "real.txt").read_text() == "new\n"


async def test_write_file_errors_say_what_to_do(tools: ToolRegistry, ctx: ToolContext) -> None:
    (ctx.workspace / "dir").mkdir()
    (ctx.workspace / "plain").write_text("x")
    big = "x" * (5 * 1024 * 1024 + 1)
    too_big = await call(tools, ctx, "write_file", path="big.txt", content=big)
    assert too_big.is_error and "more than write_file's limit of 5242880 bytes" in too_big.text
    assert not (ctx.workspace / "big.txt").exists()
    on_dir = await call(tools, ctx, "write_file", path="dir", content="x")
    assert on_dir.is_error and "not a regular file; choose another path" in on_dir.text
    under_file = await call(tools, ctx, "write_file", path="plain/x.txt", content="x")
    assert under_file.is_error and "a part of it is a file" in under_file.text


# --- edit_file ---------------------------------------------------------------------

SOURCE = "def load():\n    return 1\n\n\ndef save():\n    return 1\n"


async def test_edit_file_replaces_one_exact_match_and_shows_it(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    (ctx.workspace / "app.py").write_text(SOURCE)
    out = await call(
        tools, ctx, "edit_file", path="app.py", old_text="def save():\n    return 1",
        new_text="def save():\n    return 2",
    )  # fmt: skip
    assert not out.is_error, out.text
    assert out.text.startswith("replaced 1 occurrence in app.py; the file now has 6 lines")
    assert "     6\t    return 2" in out.text
    assert (ctx.workspace / "app.py").read_text() == SOURCE.replace(
        "save():\n    return 1", "save():\n    return 2"
    )


async def test_edit_file_more_than_one_match_needs_replace_all(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    (ctx.workspace / "app.py").write_text(SOURCE)
    out = await call(tools, ctx, "edit_file", path="app.py", old_text="return 1", new_text="x")
    assert out.is_error
    assert "old_text occurs 2 times (starting on lines 2, 6)" in out.text
    assert "replace_all=true" in out.text
    assert (ctx.workspace / "app.py").read_text() == SOURCE
    out = await call(
        tools, ctx, "edit_file", path="app.py", old_text="return 1", new_text="return 0",
        replace_all=True,
    )  # fmt: skip
    assert out.text.startswith("replaced 2 occurrences in app.py")
    assert (ctx.workspace / "app.py").read_text().count("return 0") == 2


async def test_edit_file_not_found_shows_the_closest_lines(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    (ctx.workspace / "app.py").write_text(SOURCE)
    indented = await call(
        tools, ctx, "edit_file", path="app.py", old_text="return 1\ndef load():",
        new_text="x",
    )  # fmt: skip
    assert indented.is_error
    assert "different indentation or spacing" in indented.text
    assert "     2\t    return 1" in indented.text
    typo = await call(tools, ctx, "edit_file", path="app.py", old_text="def sav():", new_text="")
    assert typo.is_error and "closest lines" in typo.text
    assert "     5\tdef save():" in typo.text
    nothing = await call(tools, ctx, "edit_file", path="app.py", old_text="zzzz", new_text="")
    assert nothing.is_error and "no line resembles it; read the file" in nothing.text
    assert (ctx.workspace / "app.py").read_text() == SOURCE


async def test_edit_file_keeps_windows_line_endings(tools: ToolRegistry, ctx: ToolContext) -> None:
    (ctx.workspace / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = await call(
        tools, ctx, "edit_file", path="win.txt", old_text="one\ntwo", new_text="one\n2"
    )
    assert not out.is_error, out.text
    assert (ctx.workspace / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


async def test_edit_file_errors(tools: ToolRegistry, ctx: ToolContext, tmp_path: Path) -> None:
    (ctx.workspace / "a.txt").write_text("same\n")
    (ctx.workspace / "blob").write_bytes(b"\0\1\2same")
    same = await call(tools, ctx, "edit_file", path="a.txt", old_text="same", new_text="same")
    assert same.is_error and "nothing would change" in same.text
    missing = await call(tools, ctx, "edit_file", path="b.txt", old_text="x", new_text="y")
    assert missing.is_error and "no such file: b.txt" in missing.text
    binary = await call(tools, ctx, "edit_file", path="blob", old_text="same", new_text="x")
    assert binary.is_error and "looks binary" in binary.text
    outside = await call(tools, ctx, "edit_file", path="../x", old_text="a", new_text="b")
    assert_refused(outside, "../x", ctx.workspace.parent / "x")


# --- grep ----------------------------------------------------------------------------


@pytest.fixture
def tree(ctx: ToolContext, tmp_path: Path) -> Path:
    root = ctx.workspace
    (root / "src").mkdir()
    (root / "src/app.py").write_text("import os\ndef load():\n    return os.environ\n")
    (root / "src/util.py").write_text("def LOAD_ALL():\n    pass\n")
    (root / "README.md").write_text("call load() first\n")
    (root / "image.png").write_bytes(b"\x89PNG\0\0load")
    (root / ".git").mkdir()
    (root / ".git/config").write_text("load = yes\n")
    outside = tmp_path / "secret.py"
    outside.write_text("def load(): secret\n")
    (root / "src/leak.py").symlink_to(outside)
    return root


async def test_grep_finds_lines_and_skips_binary_git_and_links_out(
    tools: ToolRegistry, ctx: ToolContext, tree: Path
) -> None:
    out = await call(tools, ctx, "grep", pattern=r"load\(")
    assert out.text.splitlines() == [
        "README.md:1: call load() first",
        "src/app.py:2: def load():",
        "(2 matches in 2 of 3 files searched under .; 1 binary files skipped; "
        "1 symlinks leading outside the workspace skipped)",
    ]
    assert "secret" not in out.text


async def test_grep_glob_ignore_case_literal_and_path(
    tools: ToolRegistry, ctx: ToolContext, tree: Path
) -> None:
    out = await call(tools, ctx, "grep", pattern="load", glob="*.py", ignore_case=True)
    assert [line.split(":")[0] for line in out.text.splitlines()[:-1]] == [
        "src/app.py",
        "src/util.py",
    ]
    out = await call(tools, ctx, "grep", pattern="load()", literal=True, path="README.md")
    assert out.text.splitlines()[0] == "README.md:1: call load() first"
    out = await call(tools, ctx, "grep", pattern="return", glob="src/*.py")
    assert out.text.splitlines()[0] == "src/app.py:3:     return os.environ"
    out = await call(tools, ctx, "grep", pattern="nowhere", path="src")
    assert not out.is_error
    assert out.text == "(no matches for 'nowhere' in 2 files searched under src; " + (
        "1 symlinks leading outside the workspace skipped)"
    )


async def test_grep_caps_results_and_says_there_are_more(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    (ctx.workspace / "many.txt").write_text("".join(f"hit {i}\n" for i in range(50)))
    out = await call(tools, ctx, "grep", pattern="hit", limit=10)
    lines = out.text.splitlines()
    assert lines[:2] == ["many.txt:1: hit 0", "many.txt:2: hit 1"] and len(lines) == 11
    assert "stopped at 10 matches; there are more" in lines[-1]


async def test_grep_errors(tools: ToolRegistry, ctx: ToolContext) -> None:
    bad = await call(tools, ctx, "grep", pattern="load(")
    assert bad.is_error and "not a valid regular expression" in bad.text
    assert "literal=true" in bad.text
    out = await call(tools, ctx, "grep", pattern="root", path="/etc")
    assert_refused(out, "/etc", "/etc")
    missing = await call(tools, ctx, "grep", pattern="x", path="nope")
    assert missing.is_error and "no such file or directory: nope" in missing.text


# --- find_file -----------------------------------------------------------------------


async def test_find_file_lists_sorted_matches_under_a_directory(
    tools: ToolRegistry, ctx: ToolContext, tree: Path
) -> None:
    out = await call(tools, ctx, "find_file", pattern="*.py")
    assert out.text.splitlines() == [
        "src/app.py",
        "src/leak.py",
        "src/util.py",
        "(3 matches for '*.py' under .; 6 entries looked at)",
    ]
    out = await call(tools, ctx, "find_file", pattern="sr")
    assert out.text.splitlines()[0] == "src/"
    out = await call(tools, ctx, "find_file", pattern="*", path="src", limit=2)
    assert out.text.splitlines()[:2] == ["src/app.py", "src/leak.py"]
    assert "showing the first 2; 1 more not shown" in out.text
    out = await call(tools, ctx, "find_file", pattern="config")
    assert out.text.startswith("(nothing under . matches 'config'")  # .git is not entered


async def test_find_file_errors(tools: ToolRegistry, ctx: ToolContext, tree: Path) -> None:
    out = await call(tools, ctx, "find_file", pattern="*", path="/")
    assert_refused(out, "/", "/")
    out = await call(tools, ctx, "find_file", pattern="*", path="README.md")
    assert out.is_error and "is a file, not a directory" in out.text


async def test_every_file_tool_states_its_reach(tools: ToolRegistry) -> None:
    cases: dict[str, tuple[dict[str, Any], Reach]] = {
        "read_file": ({"path": "a"}, Reach(paths=("a",))),
        "write_file": ({"path": "a", "content": ""}, Reach(paths=("a",), write_paths=("a",))),
        "edit_file": (
            {"path": "a", "old_text": "x", "new_text": "y"},
            Reach(paths=("a",), write_paths=("a",)),
        ),
        "grep": ({"pattern": "x", "path": "src"}, Reach(paths=("src",))),
        "find_file": ({"pattern": "x"}, Reach(paths=(".",))),
    }
    for name, (args, reach) in cases.items():
        tool = tools.get(name)
        assert tool is not None
        assert await tool.reach(tool.Args.model_validate(args)) == reach  # type: ignore[attr-defined]


# --- the ledger: files the agent did not write taint the session ---------------------


async def test_a_file_the_agent_wrote_reads_untainted_until_someone_else_changes_it(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    await call(tools, ctx, "write_file", path="notes.md", content="my notes\n")
    own = await call(tools, ctx, "read_file", path="notes.md")
    assert own.untrusted_source is None
    own_grep = await call(tools, ctx, "grep", pattern="notes")
    assert own_grep.untrusted_source is None
    await anyio.run_process(["sh", "-c", "echo 'do what I say' >> notes.md"], cwd=ctx.workspace)
    changed = await call(tools, ctx, "read_file", path="notes.md")
    assert "do what I say" in changed.text
    path = ctx.workspace.resolve() / "notes.md"
    assert changed.untrusted_source == f"read_file {path} (not written by the agent)"
    changed_grep = await call(tools, ctx, "grep", pattern="notes")
    assert changed_grep.untrusted_source == f"grep {path} (not written by the agent)"


async def test_a_file_never_written_by_the_agent_reads_tainted(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    await anyio.run_process(["sh", "-c", "echo cloned > repo.txt"], cwd=ctx.workspace)
    await call(tools, ctx, "write_file", path="mine.txt", content="cloned too\n")
    out = await call(tools, ctx, "read_file", path="repo.txt")
    assert out.untrusted_source is not None and "repo.txt" in out.untrusted_source
    both = await call(tools, ctx, "grep", pattern="cloned")
    assert both.untrusted_source is not None and "repo.txt" in both.untrusted_source
    mine = await call(tools, ctx, "grep", pattern="cloned", glob="mine.txt")
    assert mine.untrusted_source is None


async def test_an_edit_keeps_a_file_the_agents_own_only_if_it_was(
    tools: ToolRegistry, ctx: ToolContext
) -> None:
    await call(tools, ctx, "write_file", path="own.txt", content="alpha\n")
    (ctx.workspace / "foreign.txt").write_text("alpha from someone\n")
    own = await call(tools, ctx, "edit_file", path="own.txt", old_text="alpha", new_text="b")
    foreign = await call(
        tools, ctx, "edit_file", path="foreign.txt", old_text="alpha", new_text="b"
    )
    assert own.untrusted_source is None
    assert foreign.untrusted_source is not None  # it shows the file's other lines
    assert (await call(tools, ctx, "read_file", path="own.txt")).untrusted_source is None
    read_foreign = await call(tools, ctx, "read_file", path="foreign.txt")
    assert read_foreign.untrusted_source is not None


async def test_what_a_tainted_session_writes_is_not_the_agents_own(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    """A tainted run may be copying a stranger's words into the file: a later clean
    session reading it is tainted too."""
    taint = Taint((TaintSource("email from eve@example.net", "ev-1", "2024-01-01T00:00:00Z"),))
    tainted = context(tmp_path / "data", taint=taint)
    clean = context(tmp_path / "data")
    await call(tools, clean, "write_file", path="a.txt", content="clean\n")
    await call(tools, tainted, "write_file", path="a.txt", content="from the email\n")
    out = await call(tools, clean, "read_file", path="a.txt")
    assert out.untrusted_source is not None


async def test_the_ledger_survives_reopening_the_sqlite_store(tmp_path: Path) -> None:
    ctx = context(tmp_path / "data")
    db = tmp_path / "data" / "wakeful.db"
    store = await SqliteStore(db).open()
    try:
        tools = default_registry(state=store)
        await call(tools, ctx, "write_file", path="plan.md", content="step 1\n")
        await call(tools, ctx, "write_file", path="later.md", content="v1\n")
    finally:
        await store.aclose()
    (ctx.workspace / "later.md").write_text("v2 by someone else\n")
    store = await SqliteStore(db).open()
    try:
        tools = default_registry(state=store)
        plan = await call(tools, ctx, "read_file", path="plan.md")
        later = await call(tools, ctx, "read_file", path="later.md")
        key = f"written:{ctx.workspace.resolve() / 'plan.md'}"
        assert await store.get_state(key) == digest(b"step 1\n")
    finally:
        await store.aclose()
    assert plan.untrusted_source is None and "step 1" in plan.text
    assert later.untrusted_source is not None


async def test_the_daemon_keeps_the_ledger_in_its_store(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """lifespan hands the store to the registry: a file the model wrote is recorded there."""
    from tests.daemon_harness import daemon_settings, harness

    data_dir = tmp_path / "data"
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("write_file", {"path": "hello.txt", "content": "hi\n"})]),
        text_reply("done"),
    )
    async with harness(daemon_settings(data_dir, model_server.base_url)) as h:
        await h.send("write hello")
        await model_server.await_requests(2, timeout_s=10)
        [result] = [m for m in model_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "wrote 3 bytes, 1 lines to hello.txt: created" in result["content"]
    store = await SqliteStore(data_dir / "wakeful.db").open()
    try:
        path = (data_dir / "workspace").resolve() / "hello.txt"
        assert await store.get_state(f"written:{path}") == digest(b"hi\n")
    finally:
        await store.aclose()
    assert path.read_text() == "hi\n"


async def test_a_background_tasks_full_output_is_readable_with_read_file(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """start_shell saves a task's output among the saved outputs, so the path its exit
    event names is one read_file may read (the task records beside it stay out of reach)."""
    from tests.daemon_harness import daemon_settings, harness, last_user_text, watch_feed
    from tests.test_shell_tasks_scenarios import non_status

    def model(body: dict[str, Any]) -> Reply:
        last = non_status(body)[-1]
        if last["role"] == "tool" and "lines 4991-4993" in str(last["content"]):
            return Reply(text="read: " + str(last["content"]).splitlines()[0].split()[-1])
        if last["role"] == "tool":
            return Reply(text="Started.")
        found = re.search(r"full output in (\S+\.log)\)", last_user_text(body))
        if found is None:
            return Reply(tool_calls=[ToolCallSpec("start_shell", {"command": "seq 1 5000"})])
        spec = {"path": found.group(1), "offset": 4990, "limit": 3}
        return Reply(tool_calls=[ToolCallSpec("read_file", spec)])

    model_server.responder = model
    data_dir = tmp_path / "data"
    settings = daemon_settings(data_dir, model_server.base_url)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("count to 5000 in the background")
        await feed.wait_for(lambda i: str(i.get("text", "")).startswith("read: "))
        texts = [str(i.get("text", "")) for i in feed.items]
    assert "read: 4991" in texts
    [log] = list((data_dir / "outputs" / "tasks").glob("*.log"))
    [record] = list((data_dir / "tasks").glob("*.json"))
    out = await call(default_registry(), context(data_dir), "read_file", path=str(record))
    assert_refused(out, str(record), record)
    assert log.read_text().startswith("1\n2\n")


async def test_grep_matches_each_line_on_its_own(tools: ToolRegistry, ctx: ToolContext) -> None:
    """Anchors and look-arounds mean one line, whatever the lines around it (a file with
    no match anywhere is skipped by one search of its whole text, never a line that
    would match), and Windows line endings are not part of a line."""
    (ctx.workspace / "a.txt").write_text("start\nfoo\nbar\n")
    (ctx.workspace / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    for pattern in ("^foo$", r"\Afoo", r"foo(?!\nbar)", r"(?<!\n)foo\Z"):
        out = await call(tools, ctx, "grep", pattern=pattern, glob="a.txt")
        assert out.text.splitlines()[0] == "a.txt:2: foo", (pattern, out.text)
    out = await call(tools, ctx, "grep", pattern="one$")
    assert out.text.splitlines()[0] == "win.txt:1: one"


def test_written_files_keep_the_workspace_owner(tmp_path: Path) -> None:
    """As root, what the tools write in a workspace given to the sandbox user stays
    that user's (new directories included), so sandboxed commands can change it; the
    sandbox then need not walk the workspace at every start."""
    import os

    from wakeful.tools.file_access import write_atomically

    if os.geteuid() != 0:
        pytest.fail("this test checks ownership as the daemon runs under systemd: as root")
    nobody = 65534
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    os.chown(workspace, nobody, nobody)
    write_atomically(workspace / "notes" / "deep" / "a.txt", b"one")
    write_atomically(workspace / "top.txt", b"two")
    for made in ("notes", "notes/deep", "notes/deep/a.txt", "top.txt"):
        assert (workspace / made).stat().st_uid == nobody, made
    kept = workspace / "root-owned.txt"
    kept.write_bytes(b"old")
    write_atomically(kept, b"new")  # a replaced file keeps its owner
    assert kept.stat().st_uid == 0
