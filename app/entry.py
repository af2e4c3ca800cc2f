"""The `draftbench` command: the desktop app with no arguments, the headless CLI otherwise."""

import sys

from workbench import cli


def _gui(db: str | None, smoke_test: bool = False) -> int:
    # Qt is imported only here, so `--version`, `--info` and the headless commands never load it.
    from app.main import main as gui_main

    return gui_main(db, smoke_test)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("export", "report"):
        # Charts are drawn by pyqtgraph (offscreen when there is no display), so these live here.
        from app.exports import main as export_main

        return export_main(argv)
    return cli.main(argv, gui=_gui)


if __name__ == "__main__":
    sys.exit(main())
