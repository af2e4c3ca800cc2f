"""The `draftbench` command: the desktop app with no arguments, the headless CLI otherwise."""

import sys
from typing import TYPE_CHECKING

from workbench import cli

if TYPE_CHECKING:
    from workbench.usecases.export_options import ExportOptions


def _gui(db: str | None, smoke_test: bool = False, debug: bool = False) -> int:
    # Qt is imported only here, so `--version`, `--info` and the headless commands never load it.
    from app.jobs import child
    from app.main import main as gui_main

    child.debug = debug  # the app started with --debug: so is every `draftbench` it starts
    return gui_main(db, smoke_test)


def _draw(options: "ExportOptions") -> int:
    """`options`: the ExportOptions of `export` or `report`, parsed by workbench.cli.export."""
    # Charts are drawn with pyqtgraph (offscreen when there is no display): imported only for them.
    from app.exports import main as export_main

    return export_main(options)


def main(argv: list[str] | None = None) -> int:
    return cli.main(sys.argv[1:] if argv is None else argv, gui=_gui, draw=_draw)


if __name__ == "__main__":
    sys.exit(main())
