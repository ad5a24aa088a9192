"""The ``wakeful`` command's entry point: start-up settings first, then the CLI.

Importing the CLI (and, for ``run``, the daemon) defines hundreds of classes;
what changes how they are built must be in place before the first of them.
"""

from __future__ import annotations

import os
import sys

from wakeful.kernel import codegen_cache

# pydantic looks for plugins in the entry points of every installed package when
# it builds its first model (~20 ms of start → READY, more with a cold disk); wakeful
# uses none. An operator who wants one sets the variable (to "" or a list of names).
PYDANTIC_PLUGINS = ("PYDANTIC_DISABLE_PLUGINS", "__all__")


def prepare(role: str) -> None:
    """What must precede the first class definition: pydantic's plugin search off
    and the code cache in place (``role``: "daemon" or "client", its file)."""
    os.environ.setdefault(*PYDANTIC_PLUGINS)
    codegen_cache.install(role)


def main() -> int:
    # The daemon and a client command compile different classes: a file for each
    # (a stray "run" elsewhere on the line only picks the other file).
    prepare("daemon" if "run" in sys.argv[1:] else "client")
    from wakeful.cli.main import main as cli_main  # after prepare: it defines classes

    return cli_main()
