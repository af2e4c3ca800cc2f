"""Entry point of the desktop bundle: the same `draftbench` command as the pip-installed one."""

import sys

from app.entry import main

if __name__ == "__main__":
    sys.exit(main())
