"""`python -m repdist ...`: the command line (repdist.cli)."""

import sys

from .cli import main

sys.exit(main())
