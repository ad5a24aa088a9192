"""`python -m wakeful` is the `wakeful` command."""

import sys

from wakeful.cli.main import main

sys.exit(main())
