"""`python -m repdist_gpucheck`: make gpu-check."""

import sys

from repdist_gpucheck.check import main

sys.exit(main())
