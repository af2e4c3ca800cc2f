"""`draftbench`: the desktop app with no arguments, headless commands otherwise. The parser is
assembled here from one module per verb; each module's `register` adds its verb and the handler."""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from workbench import __version__
from workbench.cli import (
    bench, catalog, demo_model, doctor, export, models, remote, run, runs, train, whatif, workloads,
)
from workbench.cli.common import CliError, Parser

__all__ = ["CliError", "Parser", "main"]

VERBS = (doctor, demo_model, run, runs, workloads, bench, catalog, whatif, models, train, remote, export)


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="draftbench", description="Speculative-decoding workbench for vLLM.")
    p.add_argument("--version", action="version", version=f"draftbench {__version__}")
    p.add_argument("--info", action="store_true", help="print versions and paths (same as `doctor`) and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser("gui", help="open the desktop app (the default)")
    g.add_argument("--db", help="results database to open")
    g.add_argument("--smoke-test", action="store_true",
                   help="open the main window, print what it shows, and quit (for packaging checks)")
    for verb in VERBS:
        verb.register(sub)
    return p


def main(argv: list[str] | None = None, gui: Callable[[str | None, bool], int] | None = None,
         draw: export.Draw | None = None) -> int:
    """`gui` opens the desktop app and `draw` writes the charts of `export` and `report`; both are
    handed in by the app package, so this core never imports Qt (without `gui` the headless
    commands still work, and without `draw` the charts are drawn by a child process)."""
    args = _parser().parse_args(argv)
    args.draw = draw
    try:
        if args.info:
            return doctor.doctor(args)
        if args.command in (None, "gui"):
            if gui is None:
                raise CliError("this entry point has no desktop app; use a headless command (see --help)")
            return gui(getattr(args, "db", None), getattr(args, "smoke_test", False))
        return args.handler(args)
    except CliError as exc:
        print(f"draftbench: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        # Deferred: the store (and sqlite_utils) loads only with the verbs that open a database,
        # the only ones that can fail here with a database error: a file that opened but fails
        # later (damaged pages, a full disk, another writer's lock).
        from workbench import store

        if not isinstance(exc, store.DatabaseError):
            raise
        print(f"draftbench: the results database cannot be used: {store.explain(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("draftbench: interrupted", file=sys.stderr)
        return 130
