"""`python -m workbench.cli VERB ...`: the same command line as `draftbench VERB ...`."""

import sys

from workbench.cli import main

sys.exit(main())
