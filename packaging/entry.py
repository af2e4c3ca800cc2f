"""Entry point of the desktop bundle: the same `draftbench` command as the pip-installed one."""

import multiprocessing
import sys

from app.entry import main

if __name__ == "__main__":
    # The load generator starts its client processes with "spawn": a frozen executable must
    # recognise such a child and run the child's code instead of the app.
    multiprocessing.freeze_support()
    sys.exit(main())
