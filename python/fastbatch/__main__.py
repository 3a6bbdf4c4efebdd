"""`python -m fastbatch ...` is the `fastbatch` command (see fastbatch.cli)."""

import sys

from fastbatch.cli import main

sys.exit(main())
