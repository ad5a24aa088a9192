"""`python -m wakeful` is the `wakeful` command."""

import sys

from wakeful.daemon.cli import main

sys.exit(main())
