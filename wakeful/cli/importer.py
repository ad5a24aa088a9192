"""`wakeful import openclaw DIR`: another assistant's config and data into wakeful.

Only the argument parsing is here; the importer (wakeful/app/openclaw/) is imported
when the command runs, so every other command starts without it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from wakeful.cli.client import CliError

BAD_INPUT = 2


def add_arguments(sub: Any, add: Any) -> None:
    """The command, under the main parser's subcommands (``add(where, name, help)``)."""
    command = add(sub, "import", "bring another assistant's settings and data into wakeful")
    assistants = command.add_subparsers(dest="assistant", metavar="ASSISTANT", required=True)
    openclaw = add(
        assistants,
        "openclaw",
        "an OpenClaw directory (~/.openclaw): model, chat channels, standing instructions, "
        "memory, skills, heartbeat; prints what was carried over, changed or left out",
    )
    openclaw.add_argument(
        "source", metavar="DIR", help="OpenClaw's state directory, e.g. ~/.openclaw"
    )
    openclaw.add_argument(
        "--path",
        metavar="FILE",
        help="the config file to write (default: the -c FILE given, else ./wakeful.toml)",
    )
    openclaw.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="wakeful's data directory, written into the config (default: the daemon's)",
    )
    openclaw.add_argument(
        "--dry-run", action="store_true", help="print the report only; write nothing"
    )
    openclaw.add_argument(
        "--force", action="store_true", help="overwrite a config, secrets, files already there"
    )
    openclaw.add_argument(
        "--trust-memory",
        action="store_true",
        help="you vouch for OpenClaw's memory files: their lines go into memory, not review",
    )


def run(args: argparse.Namespace) -> int:
    try:
        from wakeful.app.openclaw.apply import ImportOptions, ImportRefused, import_openclaw
        from wakeful.app.openclaw.source import NotOpenClaw
    except ImportError as exc:  # json5, the extra
        raise CliError(
            f"the importer needs {exc.name or 'json5'}: pip install 'wakeful[openclaw]'",
            exit_code=BAD_INPUT,
        ) from None
    options = ImportOptions(
        config_path=Path(args.path or getattr(args, "config", None) or "wakeful.toml"),
        data_dir=args.data_dir,
        dry_run=args.dry_run,
        force=args.force,
        trust_memory=args.trust_memory,
    )
    try:
        return import_openclaw(Path(args.source), options, sys.stdout)
    except NotOpenClaw as exc:
        raise CliError(str(exc), exit_code=BAD_INPUT) from None
    except ImportRefused as exc:
        raise CliError(str(exc), exit_code=1) from None
