"""The command line's top level: the parser, assembled from one module per verb (each module's
`register` adds its verb and the handler), the --db given before or after the verb, and `main`,
which turns any failure into one line on stderr (`failure`; with --debug the traceback goes to a file)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from workbench import __version__
from workbench.cli import (
    bench, catalog, demo_model, doctor, export, failure, models, remote, run, runs, train, whatif, workloads,
)
from workbench.cli.common import CliError, Parser

__all__ = ["VERBS", "main"]

VERBS = (doctor, demo_model, run, runs, workloads, bench, catalog, whatif, models, train, remote, export)


class _NotGiven:
    """A verb's own --db while parsing, when not given: tells that from a default value, so a --db
    before the verb can fill it; holds the verb's default for when neither is given."""

    def __init__(self, default: object) -> None:
        self.default = default


def _verb_dbs(parser: argparse.ArgumentParser) -> None:
    """Every verb's --db, nested verbs included (`remote follow`), gets its _NotGiven default."""
    for action in parser._actions:
        if action.dest == "db":
            parser.set_defaults(db=_NotGiven(action.default))
        elif isinstance(action, argparse._SubParsersAction):
            for verb in dict.fromkeys(action.choices.values()):  # an alias names the same parser
                _verb_dbs(verb)


def _resolve_db(args: argparse.Namespace) -> None:
    """One args.db from `draftbench --db FILE VERB` and `draftbench VERB --db FILE`. Both given
    and naming different files, or a --db before a verb that opens no database, is refused."""
    before = getattr(args, "global_db", None)
    after = getattr(args, "db", None)
    if isinstance(after, _NotGiven):
        args.db = before if before is not None else after.default
    elif after is not None:
        if before is not None and os.path.realpath(before) != os.path.realpath(after):
            raise CliError(f"--db given twice, before the command ({before}) and after it ({after}): give it once")
    elif args.command is None:
        args.db = before  # the desktop app
    elif before is not None:
        verb = " ".join(filter(None, (args.command, getattr(args, f"{args.command}_command", None))))
        raise CliError(f"--db {before}: `draftbench {verb}` opens no results database")


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="draftbench", description="Speculative-decoding workbench for vLLM.")
    p.add_argument("--version", action="version", version=f"draftbench {__version__}")
    p.add_argument("--info", action="store_true", help="print versions and paths (same as `doctor`) and exit")
    p.add_argument("--debug", action="store_true",
                   help="on an error, keep the full traceback in a file under the data directory's "
                        "logs folder and name that file (the desktop app passes it on to the sweeps "
                        "and training runs it starts)")
    # Its own dest, since a verb's parser would overwrite `db` with its default; absent from the
    # namespace unless given.
    p.add_argument("--db", dest="global_db", metavar="FILE", default=argparse.SUPPRESS,
                   help="results database, for every command that uses one (after the command too)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser("gui", help="open the desktop app (the default)")
    g.add_argument("--db", help="results database to open")
    g.add_argument("--smoke-test", action="store_true",
                   help="open the main window, print what it shows, and quit (for packaging checks)")
    for verb in VERBS:
        verb.register(sub)
    _verb_dbs(p)
    return p


def main(argv: list[str] | None = None, gui: Callable[[str | None, bool, bool], int] | None = None,
         draw: export.Draw | None = None) -> int:
    """`gui(db, smoke_test, debug)` opens the desktop app (with `debug`, the `draftbench` children
    it starts get --debug too) and `draw` writes the charts of `export` and `report`; both are
    handed in by the app package, so this core never imports Qt (without `gui` the headless
    commands still work, and without `draw` the charts are drawn by a child process)."""
    args = _parser().parse_args(argv)
    args.draw = draw
    try:
        _resolve_db(args)
        if args.info:
            return doctor.doctor(args)
        if args.command in (None, "gui"):
            if gui is None:
                raise CliError("this entry point has no desktop app; use a headless command (see --help)")
            return gui(getattr(args, "db", None), getattr(args, "smoke_test", False), args.debug)
        return args.handler(args)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every failure said in one line
        return failure.report(exc, sys.argv[1:] if argv is None else argv, args.debug)
