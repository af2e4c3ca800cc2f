"""`draftbench export` and `draftbench report`: the Compare charts, their data and an HTML report.

The charts are drawn by pyqtgraph on Qt's offscreen platform, in the app package, which this core
never imports (an import-linter contract). So the verbs are defined here, where `--help` lists
them and their options are checked, and drawn by app.exports: handed in by `draftbench` (app.entry,
which also serves the desktop bundle, where no `python -m` exists), or else run as the child
process `python -m app.exports`, so Qt stays out of this one. Either way app.exports parses the
same options and answers the same lines."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Callable

from workbench import paths

# app.exports.main: takes the verb and its options as a command line, returns the exit status.
Draw = Callable[[list[str]], int]

CHART_NAMES = ("per_position", "throughput", "efficiency", "mal", "prediction", "concurrency", "by_category",
               "by_prompt_length", "energy", "gpus")
# Charts of what-if runs alone (acceptance imposed), apart from the measured ones above.
WHAT_IF_CHART_NAMES = ("breakeven",)


def _ids(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("runs are comma-separated run ids, e.g. 3,4,7") from None


def add_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """The options of `export` or `report`; the child that draws them parses the same ones."""
    parser.add_argument("--db", default=str(paths.default_db()))
    parser.add_argument("--experiment", type=int, help="experiment id (default: the latest)")
    parser.add_argument("--runs", type=_ids, help="comma-separated run ids instead of an experiment")
    if verb == "export":
        parser.add_argument("--out", default="draftbench-export", help="folder to write into")
        parser.add_argument("--format", default="png,svg,pdf,csv,json", help="any of png,svg,pdf,csv,json")
        parser.add_argument("--chart", default="all",
                            help=f"all, or any of {','.join(CHART_NAMES + WHAT_IF_CHART_NAMES)}")
        parser.add_argument("--width", type=int, default=1200)
        parser.add_argument("--height", type=int, default=800)
        parser.add_argument("--dpi", type=int, default=150)
    else:
        parser.add_argument("--out", default="draftbench-report.html", help="the HTML file to write")
        parser.add_argument("--title", default=None)


def register(sub) -> None:
    e = sub.add_parser("export", help="write the Compare charts (png, svg, pdf) and their data (csv, json)")
    add_arguments(e, "export")
    e.set_defaults(handler=export, verb="export")
    r = sub.add_parser("report", help="write one self-contained HTML report of an experiment or of chosen runs")
    add_arguments(r, "report")
    r.set_defaults(handler=export, verb="report")


def child_argv(args: argparse.Namespace) -> list[str]:
    """The parsed options written back as a command line for the child."""
    argv = [args.verb, "--db", args.db, "--out", args.out]
    if args.experiment is not None:
        argv += ["--experiment", str(args.experiment)]
    if args.runs:
        argv += ["--runs", ",".join(map(str, args.runs))]
    if args.verb == "export":
        argv += ["--format", args.format, "--chart", args.chart, "--width", str(args.width),
                 "--height", str(args.height), "--dpi", str(args.dpi)]
    elif args.title is not None:
        argv += ["--title", args.title]
    return argv


def export(args) -> int:
    draw: Draw | None = getattr(args, "draw", None)
    if draw is not None:
        return draw(child_argv(args))
    # Its messages and exit status are the child's own: one line and 2 for bad input, as here.
    return subprocess.call([sys.executable, "-m", "app.exports", *child_argv(args)])
