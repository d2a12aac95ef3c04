"""`python -m momor.cli`: the same as the `momor` console script."""

import sys

from . import main

sys.exit(main())
