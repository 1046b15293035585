"""``python -m lanes``: the same command line as the ``lanes`` script."""

import sys

from lanes.cli import main

sys.exit(main())
