"""The ``wakeful`` command: run the daemon, or talk to a running one over HTTP.

Exit codes: 0 success, 1 runtime failure (daemon unreachable, refused,
timed out), 2 usage or configuration error. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wakeful.cli import backup_args as cli_backup_args
from wakeful.cli import budget as cli_budget
from wakeful.cli import context as cli_context
from wakeful.cli import doctor as cli_doctor
from wakeful.cli import importer as cli_importer
from wakeful.cli import memory as cli_memory
from wakeful.cli import onboard_args as cli_onboard_args
from wakeful.cli import pairing as cli_pairing
from wakeful.cli import safety as cli_safety
from wakeful.cli import usage as cli_usage
from wakeful.cli.client import CliError, DaemonClient
from wakeful.cli.events import require_session, show_events
from wakeful.cli.status import compact_status
from wakeful.cli.status_text import status_lines, tree_lines
from wakeful.cli.wait import AnswerWatch, answered, finish
from wakeful.kernel.config_files import ConfigError, find_config_file
from wakeful.kernel.session_names import SESSION_RULE, is_session_name

# Client commands import only the client (the standard library, mostly): the daemon's
# config, its HTTP app and the terminal UI are imported by the commands that use them.
if TYPE_CHECKING:
    from wakeful.app.config import Settings

NO_MODEL_HELP = (
    "No model is configured, so events are stored but not answered yet.\n"
    "Set one in the config file:\n"
    '    [llm]\n    model = "gpt-4.1-mini"\n    api_key_env = "OPENAI_API_KEY"\n'
    "(or WAKEFUL_LLM__MODEL=... in the daemon's environment; any OpenAI-compatible\n"
    "server works via [llm] base_url), then restart `wakeful run`."
)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help
        return exc.code if isinstance(exc.code, int) else 2
    command: Callable[[argparse.Namespace], int] = args.func
    try:
        return command(args)
    except ConfigError as exc:
        _error(f"configuration error: {exc}")
        return 2
    except CliError as exc:
        _error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `wakeful events | head`: the reader left; that is not an error. Point
        # stdout at /dev/null so the interpreter's final flush does not fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _error(message: str) -> None:
    print(f"wakeful: {message}", file=sys.stderr)


def _config_path(given: str | None) -> Path | None:
    return find_config_file(given)


def _settings(args: argparse.Namespace) -> Settings:
    from wakeful.app.config import load_settings

    return load_settings(_config_path(args.config))


def _session_name(name: str) -> str:
    """A session name the daemon takes, or argparse's one-line error naming the rule."""
    if not is_session_name(name):
        raise argparse.ArgumentTypeError(f"{name!r} is not a session name: use {SESSION_RULE}")
    return name


def _client(args: argparse.Namespace) -> DaemonClient:
    return DaemonClient.from_config(_config_path(args.config))


# --- commands ---------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    # The collector paused while the daemon imports and builds what it keeps for its whole
    # life: ~180 passes over a growing heap that find almost nothing (~80 ms of start →
    # READY). Serving switches it on again, with that heap frozen (freeze_startup_heap).
    gc.disable()
    try:
        # Imported here so the CLI works (init, send, status) without the daemon's deps.
        from wakeful.app.config import load_settings
        from wakeful.app.service import run_daemon

        path = _config_path(args.config)
        settings = load_settings(path)

        return run_daemon(settings, config_path=path, exit_process=True)  # SIGHUP re-reads path
    finally:
        gc.enable()  # a start that failed before serving


def cmd_init(args: argparse.Namespace) -> int:
    from wakeful.app.config_starter import STARTER_CONFIG
    from wakeful.kernel.atomic_file import write_atomic

    path = Path(args.path)
    if path.exists() and not args.force:
        raise CliError(f"{path} already exists; use --force to overwrite it", exit_code=1)
    try:
        write_atomic(path, STARTER_CONFIG)  # --force over a config: never half of one
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(f"wrote {path}; edit [llm] model, then run `wakeful run -c {path}`")
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    client = _client(args)
    kind = "user.interrupt" if args.interrupt else "user.input"
    if not args.wait:
        result = client.send(args.session, args.text, kind)
        print(f"accepted {result['event_id']}" + (" (duplicate)" if result["duplicate"] else ""))
        return 0
    return _send_and_wait(client, args.session, args.text, kind, args.timeout)


def _send_and_wait(client: DaemonClient, session: str, text: str, kind: str, timeout: float) -> int:
    status = client.get_json("/api/status")
    if _model_missing(status):
        result = client.send(session, text, kind)
        _error(f"stored {result['event_id']}, but no reply will come yet:")
        print(_how_to(status), file=sys.stderr)
        return 1
    from wakeful.cli.chat_screen import ChatScreen

    deadline = time.monotonic() + timeout
    screen = ChatScreen(client, session)
    # Subscribe first so no reply can slip out between the post and the subscription;
    # then what was said while nobody listened (#6), labelled on stderr, then on stdout
    # only the replies to this message.
    with client.stream(session, deadline) as items:
        screen.show_earlier()
        watch = AnswerWatch(client.send(session, text, kind)["event_id"])
        for item in items:
            reply = watch.take(item)
            if reply is not None:
                screen.show([reply])
            if not watch.reports(item):  # the failure that ends the wait is said once, last
                _print_feed_item(item)
            idle = item.get("type") == "run" and item.get("state") == "idle"
            if idle and answered(client, session, watch):
                return finish(watch)
    raise CliError("the daemon closed the stream before the run finished")


def _print_feed_item(item: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind in {"alert", "error"}:
        detail = item.get("text") or item.get("message") or item.get("error") or item
        print(f"[{kind}] {detail}", file=sys.stderr, flush=True)


def cmd_status(args: argparse.Namespace) -> int:
    status = _client(args).get_json("/api/status")
    if args.json:
        print(json.dumps(status, indent=2, ensure_ascii=False))
        return 0
    model = status.get("model")
    if isinstance(model, dict) and "how_to_configure" in model:
        # Printed once, whole, below rather than squeezed into the summary.
        status = {**status, "model": {k: v for k, v in model.items() if k != "how_to_configure"}}
    width = shutil.get_terminal_size().columns
    lines = tree_lines(compact_status(status)) if args.all else status_lines(status, width)
    for line in lines:
        print(line)
    if _model_missing(status):
        print()
        print(_how_to(status))
    return 0


def _how_to(status: dict[str, Any]) -> str:
    model = status.get("model")
    if isinstance(model, dict) and isinstance(model.get("how_to_configure"), str):
        return str(model["how_to_configure"])
    return NO_MODEL_HELP


def _model_missing(status: dict[str, Any]) -> bool:
    llm = status.get("llm") or status.get("model")
    if isinstance(llm, dict):
        return llm.get("configured") is False or llm.get("model") == ""
    return status.get("model_configured") is False or llm == ""


def cmd_events(args: argparse.Namespace) -> int:
    return show_events(_client(args), args)


def cmd_events_retry(args: argparse.Namespace) -> int:
    entry = _client(args).retry_event(args.event_id)
    print(f"event {entry['id']} is back in session {entry['session']}'s queue", flush=True)
    return 0


def cmd_trajectory(args: argparse.Namespace) -> int:
    client = _client(args)
    session = client.segment(args.session)
    if args.raw:
        body = client.get_json(f"/api/sessions/{session}/request")["request"]
        print(json.dumps(body, indent=2, ensure_ascii=False))
        return 0
    query = "?full=1" if args.full else ""
    messages = client.get_json(f"/api/sessions/{session}/trajectory{query}")["messages"]
    if not messages:
        require_session(client, args.session)
    if args.json:
        print(json.dumps(messages, indent=2, ensure_ascii=False))
        return 0
    print(
        f"(session {args.session}'s "
        + ("whole stored conversation" if args.full else "conversation as the model sees it")
        + "; the model also gets the system prompt, the tools and a status bar: `--raw` shows "
        "the exact next request" + ("" if args.full else ", `--full` everything stored") + ")\n",
        file=sys.stderr,
    )
    if not messages:  # a blank screen would look like a failure
        print(f"(empty: nothing of session {args.session} has reached the model yet)",
              file=sys.stderr)  # fmt: skip
    for message in messages:
        print(_message_text(message))
        print()
    return 0


def _message_text(message: dict[str, Any]) -> str:
    role = message.get("role", "?")
    header = f"── {role}"
    if role == "tool":
        header += f" (result of {message.get('tool_call_id', '?')})"
    lines = [header]
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(str(p.get("text", p)) for p in content if isinstance(p, dict))
    if content:
        lines.append(str(content))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        name, arguments = function.get("name"), function.get("arguments")
        lines.append(f"→ {name}({arguments})  [{call.get('id')}]")
    return "\n".join(lines)


def cmd_open(args: argparse.Namespace) -> int:
    from wakeful.cli.open import open_page

    return open_page(_settings(args), browser=not args.no_browser)


def cmd_chat(args: argparse.Namespace) -> int:
    from wakeful.cli.chat import run_chat

    client = _client(args)
    status = client.get_json("/api/status")
    if _model_missing(status):
        _error("messages will be stored, but no reply will come yet:")
        print(_how_to(status), file=sys.stderr)
    timeout = 0.0 if _model_missing(status) else args.timeout
    return run_chat(client, args.session, timeout, history=args.history)


def cmd_pairing(args: argparse.Namespace) -> int:
    if args.action in ("approve", "deny"):
        return cli_pairing.decide(_client(args), args.platform, args.code, args.action)
    return cli_pairing.show_pending(_client(args))


def cmd_safety(args: argparse.Namespace) -> int:
    return cli_safety.run(args, _client(args))


def cmd_context(args: argparse.Namespace) -> int:
    return cli_context.run(args, _client(args))


def cmd_budget(args: argparse.Namespace) -> int:
    return cli_budget.run(args, _client(args))


def cmd_memory(args: argparse.Namespace) -> int:
    return cli_memory.run(args, _client(args))


def cmd_usage(args: argparse.Namespace) -> int:
    if args.days < 1:
        raise CliError("--days must be 1 or more")
    return cli_usage.run(args, _client(args))


def cmd_backup(args: argparse.Namespace) -> int:
    from wakeful.cli import backup as cli_backup

    settings = _settings(args)
    data_dir = settings.daemon.data_dir_path()
    return cli_backup.run_backup(args, data_dir, settings.store.backend)


def cmd_doctor(args: argparse.Namespace) -> int:
    return cli_doctor.run(args, _config_path(args.config))


def cmd_onboard(args: argparse.Namespace) -> int:
    from wakeful.cli import onboard as cli_onboard  # its imports are the set-up's own

    return cli_onboard.run(args)


def cmd_import(args: argparse.Namespace) -> int:
    return cli_importer.run(args)


def cmd_restore(args: argparse.Namespace) -> int:
    from wakeful.cli import backup as cli_backup

    return cli_backup.run_restore(args, _settings(args).daemon.data_dir_path())


# --- argument parsing ---------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wakeful",
        description="wakeful: an event-driven agent daemon, and a client for it.",
    )
    _config_arg(parser, None)
    parser.add_argument(
        "--version", action=_VersionAction, help="show program's version number and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add(sub, "run", cmd_run, "run the daemon in the foreground (logs to stdout)")
    init = _add(sub, "init", cmd_init, "write a commented starter config file")
    init.add_argument("--path", default="wakeful.toml", help="where to write it")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    cli_onboard_args.add_arguments(
        sub, lambda where, name, text: _add(where, name, cmd_onboard, text)
    )
    send = _add(sub, "send", cmd_send, "send a message to the running daemon")
    _session_arg(send)
    send.add_argument("--interrupt", action="store_true", help="send as user.interrupt")
    send.add_argument("--wait", action="store_true", help="print replies until the run ends")
    _timeout_arg(send)
    send.add_argument("text", help="the message")
    status = _add(sub, "status", cmd_status, "sessions, queue, recent tasks and model health")
    status.add_argument("--json", action="store_true", help="everything, as the daemon says it")
    status.add_argument("--all", action="store_true", help="every field, as an indented tree")
    events = _add(sub, "events", cmd_events, "show the event log")
    events.add_argument("--session", "-s", help="only this session (default: all)")
    events.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    events.add_argument("--limit", "-n", type=_positive_int, default=50, help="page size")
    events.add_argument(
        "--before", type=_positive_int, metavar="SEQ", help="the page of events older than SEQ"
    )
    events.add_argument("--all", action="store_true", help="every event, oldest first")
    actions = events.add_subparsers(dest="action", metavar="ACTION")
    retry = _add(actions, "retry", cmd_events_retry, "put a quarantined event back in its queue")
    retry.add_argument("event_id", metavar="ID", help="the event's id (see `wakeful status`)")
    trajectory = _add(
        sub, "trajectory", cmd_trajectory, "a session's stored conversation (the trajectory)"
    )
    trajectory.add_argument("session", help="session name, e.g. main")
    trajectory.add_argument("--json", action="store_true", help="the stored messages as JSON")
    trajectory.add_argument(
        "--full",
        action="store_true",
        help="everything stored, also what a compaction summarised and results pruned to stubs",
    )
    trajectory.add_argument(
        "--raw",
        action="store_true",
        help="the exact request the next model call would send (system prompt, tools, "
        "status bar), as JSON; the model is not called",
    )
    chat = _add(sub, "chat", cmd_chat, "interactive chat in the terminal")
    _session_arg(chat)
    _timeout_arg(chat)
    chat.add_argument(
        "--history", action="store_true", help="first print every message of the session"
    )
    pairing = _add(sub, "pairing", cmd_pairing, "let unknown chat users in: list, approve, deny")
    pairing_actions = pairing.add_subparsers(dest="action", metavar="ACTION")
    cli_pairing.add_arguments(
        pairing, lambda name, text: _add(pairing_actions, name, cmd_pairing, text)
    )
    cli_safety.add_arguments(sub, lambda where, name, text: _add(where, name, cmd_safety, text))
    cli_context.add_arguments(sub, lambda where, name, text: _add(where, name, cmd_context, text))
    cli_budget.add_arguments(sub, lambda where, name, text: _add(where, name, cmd_budget, text))
    cli_memory.add_arguments(sub, lambda where, name, text: _add(where, name, cmd_memory, text))
    commands = {"backup": cmd_backup, "restore": cmd_restore}
    cli_backup_args.add_arguments(
        sub, lambda where, name, text: _add(where, name, commands[name], text)
    )
    cli_doctor.add_arguments(sub, lambda where, name, text: _add(where, name, cmd_doctor, text))
    cli_usage.add_arguments(sub, lambda where, name, text: _add(where, name, cmd_usage, text))
    cli_importer.add_arguments(sub, lambda where, name, text: _add(where, name, cmd_import, text))
    web = _add(sub, "open", cmd_open, "print the web page's log-in link (and open it on a desktop)")
    web.add_argument("--no-browser", action="store_true", help="only print the link")
    return parser


def _add(
    sub: Any, name: str, func: Callable[[argparse.Namespace], int], help_text: str
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(func=func)
    # Also after the subcommand (`wakeful run -c FILE`, as the units write it); SUPPRESS
    # keeps a -c given before the subcommand when none follows it.
    _config_arg(parser, argparse.SUPPRESS)
    return parser


def _config_arg(parser: argparse.ArgumentParser, default: str | None) -> None:
    parser.add_argument(
        "-c",
        "--config",
        default=default,
        metavar="FILE",
        help="config file (default: $WAKEFUL_CONFIG, else the first of ./wakeful.toml, "
        "$XDG_CONFIG_HOME/wakeful/wakeful.toml, /etc/wakeful/wakeful.toml; else the "
        "embedded defaults)",
    )


def _session_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session", "-s", default="main", type=_session_name, help="session (default: main)"
    )


def _timeout_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for the run to end"
    )


class _VersionAction(argparse.Action):
    """``--version``, looked up when asked: importlib.metadata is a dozen modules every
    other command would import only to build the parser."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"wakeful {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wakeful")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


if __name__ == "__main__":
    sys.exit(main())
