"""`python -m cli`: the `mte` command."""

import sys

from . import main

sys.exit(main())
