"""`draftbench runs` and `draftbench show`: what a results database holds."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TYPE_CHECKING

from workbench.cli.common import CliError, Verbs, open_db, table

if TYPE_CHECKING:  # the analysis loads only when a verb runs, so `--help` stays fast
    from workbench.analysis.compare import Config, Figures


def register(sub: Verbs) -> None:
    ls = sub.add_parser("runs", help="list the runs in a database")
    ls.add_argument("--db", default=None)
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=runs)

    s = sub.add_parser("show", help="a run's summary, or an experiment's table with speedups")
    s.add_argument("run", type=int, nargs="?", help="run id (default: the latest experiment's table)")
    s.add_argument("--db", default=None)
    s.add_argument("--experiment", type=int, help="experiment id for the table")
    s.add_argument("--json", action="store_true")
    s.add_argument("--include-partial", action="store_true",
                   help="count runs whose requests partly failed in the speedups (left out by default)")
    s.add_argument("--baseline", type=int, metavar="RUN",
                   help="take every speedup and latency ratio against this stored run without speculation "
                        "(any experiment's, at the same concurrency) instead of each experiment's own baseline")
    s.add_argument("--max-itl-p99", type=float, metavar="MS",
                   help="also the best N per concurrency among configurations whose ITL p99 is at most MS "
                        "milliseconds (speculation can buy throughput with stalls in the stream)")
    s.set_defaults(handler=show)


def runs(args: argparse.Namespace) -> int:
    db = open_db(args.db, readonly=True)
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import analysis, store
    from workbench.analysis import compare

    rows = store.runs(db)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=1, default=str))
        return 0
    cols = [("id", "{}"), ("experiment_id", "{}"), ("status", "{}"), ("method", "{}"), ("n", "{}"),
            ("workload", "{}"), ("concurrency", "{}"), ("repeat", "{}"), ("mal", "{:.2f}"),
            ("acceptance_rate", "{:.3f}"), ("output_tok_s", "{:.1f}")]
    cells = [[("" if getattr(row, c) is None else f.format(getattr(row, c))) for c, f in cols] for row in rows]
    header = [c for c, _ in cols]
    if any(compare.is_what_if(r) for r in rows):  # only where some run's acceptance was imposed
        header.append("what-if")
        for line, row in zip(cells, rows):
            line.append(compare.marker(row))
    raised = [analysis.alarm_kinds(db, r) for r in rows]
    if any(raised):  # only where some run raised one
        header.append("alarms")
        for line, kinds in zip(cells, raised):
            line.append(kinds)
    print(table(header, cells))
    return 0


def show(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import analysis, store
    from workbench.analysis import answer, compare, latency, pinned_baseline

    bound = getattr(args, "max_itl_p99", None)
    if bound is not None and not bound >= 0:  # NaN too
        raise CliError(f"--max-itl-p99 must be a number of milliseconds >= 0, not {bound:g}")
    if bound is not None and args.run is not None:
        raise CliError("--max-itl-p99 bounds an experiment's best N: leave out the run id")
    db = open_db(args.db, readonly=True)
    chosen = getattr(args, "baseline", None)
    # Checked before anything is printed: an unusable pin is one line, never half a table.
    pinned = pinned_baseline.read(db, chosen, args.include_partial) if chosen is not None else None
    if args.run is not None:
        row = store.run(db, args.run)
        if row is None:
            raise CliError(f"no run {args.run} in the database")
        if args.json:
            print(json.dumps(row.as_dict(), indent=1, default=str))
            return 0
        for key, value in analysis.run_summary(db, row, pinned):
            print(f"{key:<34} {value}")
        return 0
    exp = args.experiment or store.latest_experiment(db)
    if exp is None:
        raise CliError("the database holds no experiments yet")
    rows = analysis.run_table(db, exp, pinned)
    if args.json:
        print(json.dumps([dataclasses.asdict(r) for r in rows], indent=1))
        return 0
    header = ["method", "N", "workload", "conc", "status", "MAL", "accept", "tok/s", "speedup", "per-position"]
    keys = ["method", "n", "workload", "concurrency", "status", "mal", "acceptance_rate", "output_tok_s",
            "speedup", "per_position"]
    if any(r.joules_per_token for r in rows):  # only where GPU power was measured
        header[-1:-1], keys[-1:-1] = ["J/tok", "GPU %"], ["joules_per_token", "gpu_util_mean"]
    # Each only where some run has one, so a database that recorded none keeps its width.
    for head, key in (("steady tok/s", "steady"), ("cache %", "cache_hit"), ("alarms", "alarms"),
                      ("answers", "lossless")):
        if any(getattr(r, key) for r in rows):
            header.insert(-1, head)
            keys.insert(-1, key)
    if any(r.what_if for r in rows):  # only where some run's acceptance was imposed
        header.append("what-if")
        keys.append("what_if")
    # With what only the requests hold (TPOT percentiles, the per-request MAL).
    stored = latency.with_requests(db, store.runs_of_experiment(db, exp))
    cs = compare.configs(stored, args.include_partial)
    pin = pinned_baseline.apply(cs, *pinned) if pinned is not None else None
    if pin is not None:  # said first: every speedup below is against it
        print(pin.sentence + (f" {pin.missing}" if pin.missing else "") + "\n")
    print(table(header, [[getattr(r, k) for k in keys] for r in rows]))
    configurations = compare.config_table(cs)
    if configurations:
        print(f"\n{SPEEDUP_TITLE}")
        print(speedup_text(configurations))
        print(f"\n  {LATENCY_NOTE}")
    if bound is not None:
        print(f"\nbest N with ITL p99 <= {bound:g} ms (the mean over repeats; measured runs only):")
        found = [best.text for best in answer.within_itl(cs, bound)]
        for line in found or ["no speculative configuration with a baseline"]:
            print(f"  {line}")
    notes = (answer.basis_notes(cs) + answer.cache_warnings(cs) + answer.lossless_notes(cs)
             + (pin.differs if pin is not None else []))
    if notes:
        print()
        for line in notes:
            print(f"  {line}")
    print_what_if(cs)
    partial = [r for r in stored if r.status == "partial"]
    if partial:
        what = "counted in" if args.include_partial else "left out of (--include-partial counts them)"
        print(f"\n{len(partial)} partial run(s) {what} the speedups: "
              + "; ".join(f"run {r.id}: {r.error}" for r in partial))
    lines = store.recommendation_summaries(db, exp)
    if lines:
        print("\nadaptive sweep (docs/recommend-n.md):")
        for line in lines:
            print(f"  {line}")
    return 0


SPEEDUP_TITLE = "every configuration, as on the Compare page's All figures (speedup ± its 95% interval over repeats):"
LATENCY_NOTE = ("MAL pooled = 1 + accepted / drafts over the window (vLLM's), MAL req. mean = the mean of each "
                "request's; TTFT, TPOT and ITL in ms, × the baseline's at the same concurrency in brackets")
WHAT_IF_TITLE = ("what-if (acceptance imposed: {source}; dummy weights, never in the table above): step cost = "
                 "MAL read back / speedup, in baseline steps; it pays once MAL exceeds it:")


def print_what_if(cs: list[Config]) -> None:
    """The what-if configurations' table and where each pays, under a title naming the imposed curve."""
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import report
    from workbench.analysis import breakeven

    rows = breakeven.rows(cs)
    if not rows:
        return
    print("\n" + WHAT_IF_TITLE.format(source=breakeven.source_text(rows)))
    print(table([label for _, label, _ in report.WHAT_IF_COLUMNS],
                [[report.what_if_cell(r, key, fmt) for key, _, fmt in report.WHAT_IF_COLUMNS] for r in rows]))
    for line in breakeven.sentences(cs):
        print(f"  {line}")


def speedup_text(configurations: list[Figures]) -> str:
    """The Compare page's All figures, cell for cell: latency included, so that a speedup is never
    read without what it costs."""
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import report

    return table([label for _, label, _ in report.ALL_FIGURES_COLUMNS],
                 [[report.shown(r, key, fmt) for key, _, fmt in report.ALL_FIGURES_COLUMNS] for r in configurations])

