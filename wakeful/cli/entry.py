"""The ``wakeful`` command's entry point: the code cache first, then the CLI.

Importing the CLI (and, for ``run``, the daemon) defines hundreds of classes;
the cache must be in place before the first of them (wakeful/kernel/codegen_cache.py).
"""

from __future__ import annotations

import sys

from wakeful.kernel import codegen_cache


def main() -> int:
    # The daemon and a client command compile different classes: a file for each
    # (a stray "run" elsewhere on the line only picks the other file).
    codegen_cache.install("daemon" if "run" in sys.argv[1:] else "client")
    from wakeful.cli.main import main as cli_main  # after install: it defines classes

    return cli_main()
