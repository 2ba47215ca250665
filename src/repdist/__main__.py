"""`python -m repdist ...`: the command line (repdist.cli)."""

from .cli import main

raise SystemExit(main())
