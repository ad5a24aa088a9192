"""`python -m wakeful` is the `wakeful` command."""

import sys

from wakeful.cli.entry import main

sys.exit(main())
