"""`draftbench export` and `draftbench report`: the Compare charts, their data and an HTML report.

The charts are drawn by pyqtgraph on Qt's offscreen platform, in the app package, which this core
never imports (an import-linter contract). So the verbs are defined here, where `--help` lists
them and their options are parsed and checked, once, into one ExportOptions; it is drawn by
app.exports: handed in by `draftbench` (app.entry, which also serves the desktop bundle, where no
`python -m` exists), or else in the child process `python -m app.exports`, which gets the options
as JSON, so Qt stays out of this one."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Callable

from workbench import paths
from workbench.cli.common import CliError, Verbs
from workbench.usecases.chart_names import ALL_CHARTS, CHART_NAMES, WHAT_IF_CHART_NAMES
from workbench.usecases.export_options import FORMATS, ExportOptions

__all__ = ["CHART_NAMES", "WHAT_IF_CHART_NAMES", "Draw", "add_arguments", "export", "options", "register"]

# app.exports.main: draws what the options ask for, returns the exit status.
Draw = Callable[[ExportOptions], int]

SIZE_PX = (16, 20000)   # the width and height a chart may be drawn at
DPI = (30, 2400)


def _ids(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("runs are comma-separated run ids, e.g. 3,4,7") from None


def add_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """The options of `export` or `report`."""
    parser.add_argument("--db", default=str(paths.default_db()))
    parser.add_argument("--experiment", type=int, help="experiment id (default: the latest)")
    parser.add_argument("--runs", type=_ids, help="comma-separated run ids instead of an experiment")
    parser.add_argument("--baseline", type=int, metavar="RUN",
                        help="take every speedup against this stored run without speculation (as `show --baseline`)")
    if verb == "export":
        parser.add_argument("--out", default="draftbench-export", help="folder to write into")
        parser.add_argument("--format", default=",".join(ExportOptions.formats), help=f"any of {','.join(FORMATS)}")
        parser.add_argument("--chart", default="all", help=f"all, or any of {','.join(ALL_CHARTS)}")
        parser.add_argument("--width", type=int, default=ExportOptions.width)
        parser.add_argument("--height", type=int, default=ExportOptions.height)
        parser.add_argument("--dpi", type=int, default=ExportOptions.dpi)
    else:
        parser.add_argument("--out", default="draftbench-report.html", help="the HTML file to write")
        parser.add_argument("--title", default=None)


def register(sub: Verbs) -> None:
    e = sub.add_parser("export", help="write the Compare charts (png, svg, pdf) and their data (csv, json)")
    add_arguments(e, "export")
    e.set_defaults(handler=export, verb="export")
    r = sub.add_parser("report", help="write one self-contained HTML report of an experiment or of chosen runs")
    add_arguments(r, "report")
    r.set_defaults(handler=export, verb="report")


def options(args: argparse.Namespace) -> ExportOptions:
    """The parsed arguments checked and typed; CliError, in one line, for a format, chart or size
    that cannot be drawn."""
    chosen = dict(verb=args.verb, db=str(args.db), out=str(args.out), experiment=args.experiment,
                  runs=tuple(args.runs or ()), baseline=args.baseline)
    if args.verb != "export":
        return ExportOptions(**chosen, title=args.title)
    formats = tuple(f.strip().lower() for f in args.format.split(",") if f.strip())
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise CliError(f"unknown format {bad[0]!r}; choose from {', '.join(FORMATS)}")
    every = args.chart == "all"
    charts = ALL_CHARTS if every else tuple(c.strip() for c in args.chart.split(","))
    if any(c not in ALL_CHARTS for c in charts):
        raise CliError(f"unknown chart; choose from all, {', '.join(ALL_CHARTS)}")
    if not (SIZE_PX[0] <= args.width <= SIZE_PX[1] and SIZE_PX[0] <= args.height <= SIZE_PX[1]
            and DPI[0] <= args.dpi <= DPI[1]):
        raise CliError(f"width and height must be {SIZE_PX[0]}..{SIZE_PX[1]} pixels and dpi {DPI[0]}..{DPI[1]}")
    return ExportOptions(**chosen, formats=formats, charts=charts, every_chart=every, width=args.width,
                         height=args.height, dpi=args.dpi)


def export(args: argparse.Namespace) -> int:
    chosen = options(args)
    draw: Draw | None = getattr(args, "draw", None)
    if draw is not None:
        return draw(chosen)
    # Its messages and exit status are the child's own: one line and 2 for bad input, as here.
    return subprocess.call([sys.executable, "-m", "app.exports", chosen.to_json()])
