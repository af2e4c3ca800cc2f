"""`draftbench export` and `draftbench report`: the Compare charts, their data and an HTML report,
written without a display (Qt's offscreen platform). The CLI runs this module as a child process
(`python -m app.exports VERB ...`); the verbs' options are defined in workbench.cli.export."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from workbench import cli, report, store
from workbench.analysis import answer, breakeven, compare, recommend
from workbench.usecases import commands
from workbench.cli.export import CHART_NAMES, WHAT_IF_CHART_NAMES, add_arguments
from workbench.errors import DraftbenchError

ALL_CHARTS = CHART_NAMES + WHAT_IF_CHART_NAMES
WHAT_IF_TABLE = "what_if_table"  # the what-if table's file name, apart from speedup_table (measured only)


def all_data(rows: list[dict], db_path: str | Path | None, include_partial: bool = False) -> tuple[list, dict]:
    """Configurations and every chart's data, per-request attribution included when the database is
    known; `what_if` holds the what-if table (workbench.analysis.breakeven.rows)."""
    cs = compare.configs(rows, include_partial)
    data = compare.chart_data(cs)
    data.update({"prediction": recommend.chart_rows(cs), "by_category": [], "by_prompt_length": [], "gpus": [],
                 "breakeven": breakeven.chart_data(cs), "what_if": breakeven.rows(cs)})
    if db_path is not None and Path(db_path).exists():
        db = store.open_db(db_path, readonly=True)
        try:
            counted = compare.WITH_PARTIAL if include_partial else compare.COUNTED
            done = [r["id"] for r in rows if r["status"] in counted]
            # An imposed acceptance does not depend on the prompt: what-if runs say nothing per category.
            data.update(compare.request_data(db, [r["id"] for r in rows if r["status"] in counted
                                                  and not compare.is_what_if(r)]))
            data.update(compare.gpu_data(db, done))
        finally:
            store.close(db)
    return cs, data


def the_answer(rows: list[dict], cs: list) -> tuple[list[dict], list[dict]]:
    """The answer rows (each with the exact command that serves its configuration) and the crossovers."""
    by_id = {r["id"]: r for r in rows}
    table = answer.answer_rows(cs)
    for r in table:
        r["command"] = commands.serve_command(by_id[r["run"]])
    return table, answer.crossovers(cs)


class ExportError(DraftbenchError):
    pass


def select(db_path: str | Path, experiment: int | None = None, run_ids: list[int] | None = None) -> list[dict]:
    try:
        db = store.open_db(db_path, readonly=True)
    except store.StoreError as exc:
        raise ExportError(str(exc)) from None
    try:
        if run_ids:
            rows = [r for r in store.runs(db) if r["id"] in set(run_ids)]
            missing = set(run_ids) - {r["id"] for r in rows}
            if missing:
                raise ExportError(f"no run {min(missing)} in the database")
            # Speedups need the matching baselines even when only speculative runs were chosen.
            experiments = {r["experiment_id"] for r in rows}
            rows += [r for r in store.runs(db) if r["method"] == "baseline" and r["experiment_id"] in experiments
                     and r["id"] not in set(run_ids)]
            return rows
        if experiment is None:
            experiment = store.latest_experiment(db)
            if experiment is None:
                raise ExportError("the database holds no experiments yet")
        rows = store.runs_of_experiment(db, experiment)
        if not rows:
            raise ExportError(f"no experiment {experiment} in the database")
        return rows
    finally:
        store.close(db)


def _app():
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    # Deferred: Qt is loaded only when charts are drawn, so reading the data (all_data) stays headless
    from PySide6.QtWidgets import QApplication

    from app.widgets import theme

    app = QApplication.instance() or QApplication(sys.argv[:1])
    theme.apply()
    return app


def export_all(rows: list[dict], out: Path, formats: list[str], charts: list[str],
               width: int, height: int, dpi: int, db_path: str | Path | None = None) -> list[Path]:
    """Every chosen chart that has data in every chosen format, its data as CSV/JSON, and the answer
    table; a chart without data is not written (`not_drawn` says why)."""
    # Deferred: the charts load Qt and pyqtgraph, which only drawing needs
    from app.widgets import chart_export, charts as chartlib

    _app()
    out.mkdir(parents=True, exist_ok=True)
    cs, data = all_data(rows, db_path)
    caption = answer.conditions(rows)
    written: list[Path] = []
    for name in charts:
        if not chartlib.has_data(name, data):
            continue
        for fmt in formats:
            path = out / f"{name}.{fmt}"
            if fmt in ("png", "svg", "pdf"):
                w = chartlib.new_plot(name)
                chartlib.draw(w, name, data, caption)
                chart_export.export(w, path, width, height, dpi)
                w.deleteLater()
            elif fmt == "csv":
                report.write_csv(data[chartlib.DATA_OF[name]], path)
            elif fmt == "json":
                report.write_json(data[chartlib.DATA_OF[name]], path)
            written.append(path)
    tables = [("speedup_table", compare.speedup_table(cs))]
    if data["what_if"]:  # its own file: what-if rows never join the measured table
        tables.append((WHAT_IF_TABLE, what_if_table(data)))
    for name, table in tables:
        for fmt in formats:
            if fmt in ("csv", "json"):
                path = out / f"{name}.{fmt}"
                (report.write_csv if fmt == "csv" else report.write_json)(table, path)
                written.append(path)
    return written


def what_if_table(data: dict) -> list[dict]:
    """The what-if table as written to a file: every row marked what-if, with its imposed curve."""
    return [{"what_if": True, **r} for r in data["what_if"]]


def not_drawn(rows: list[dict], charts: list[str], db_path: str | Path | None = None,
              every: bool = False) -> list[str]:
    """One line per chosen chart without data: which, and why. With `every` (--chart all), a what-if
    chart only where there are what-if runs: a measured experiment is not missing one."""
    # Deferred: the chart list lives with the drawing code, which loads pyqtgraph
    from app.widgets import charts as chartlib

    _, data = all_data(rows, db_path)
    what_if = any(compare.is_what_if(r) for r in rows)
    return [f"{name} not drawn: {chartlib.EMPTY[name]}" for name in charts
            if not chartlib.has_data(name, data) and (what_if or not every or name not in WHAT_IF_CHART_NAMES)]


REPORT_SIZE = (760, 480)  # shown about 560 px wide: text stays readable


def write_report(rows: list[dict], path: Path, title: str, db_path: str | Path | None = None) -> Path:
    # Deferred: the charts load Qt and pyqtgraph, which only drawing needs
    from app.widgets import chart_export, charts as chartlib

    _app()
    cs, data = all_data(rows, db_path)
    caption = answer.conditions(rows)
    figures, missing, what_if_figures = [], [], []
    for name in ALL_CHARTS:
        if not chartlib.has_data(name, data):
            if name not in WHAT_IF_CHART_NAMES:
                missing.append((chartlib.CHARTS[name][0], chartlib.EMPTY[name]))
            continue
        w = chartlib.new_plot(name)
        chartlib.draw(w, name, data, caption)
        # The chart's own title (a what-if one names the imposed curve's source) captions it, and
        # only there: drawn into the image as well, every title read twice.
        title_of = w.getPlotItem().titleLabel.text
        w.getPlotItem().setTitle(None)
        chart_export.lay_out(w, *REPORT_SIZE)
        (what_if_figures if name in WHAT_IF_CHART_NAMES else figures).append((title_of, chart_export.svg_text(w)))
        w.deleteLater()
    table, crossings = the_answer(rows, cs)
    path.write_text(report.render(report.Report(
        title=title, conditions=caption, answer=table, crossovers=crossings, speedups=compare.speedup_table(cs),
        why_none_pays=answer.none_pays(table), trust=answer.trust_notes(cs),
        charts=figures, not_drawn=missing, runs=sorted(rows, key=lambda r: r["id"]),
        what_if=data["what_if"], what_if_sentences=breakeven.sentences(cs),
        what_if_source=breakeven.source_text(data["what_if"]), what_if_charts=what_if_figures)), encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    """`argv` is the verb (export or report) and its options."""
    parser = cli.Parser(prog=f"draftbench {argv[0]}")
    add_arguments(parser, argv[0])
    args = parser.parse_args(argv[1:])
    try:
        rows = select(args.db, args.experiment, args.runs)
        if argv[0] == "export":
            formats = [f.strip().lower() for f in args.format.split(",") if f.strip()]
            bad = [f for f in formats if f not in ("png", "svg", "pdf", "csv", "json")]
            if bad:
                raise ExportError(f"unknown format {bad[0]!r}; choose from png, svg, pdf, csv, json")
            names = list(ALL_CHARTS) if args.chart == "all" else [c.strip() for c in args.chart.split(",")]
            if [c for c in names if c not in ALL_CHARTS]:
                raise ExportError(f"unknown chart; choose from all, {', '.join(ALL_CHARTS)}")
            if not (16 <= args.width <= 20000 and 16 <= args.height <= 20000 and 30 <= args.dpi <= 2400):
                raise ExportError("width and height must be 16..20000 pixels and dpi 30..2400")
            for path in export_all(rows, Path(args.out), formats, names, args.width, args.height, args.dpi, args.db):
                print(path)
            for line in not_drawn(rows, names, args.db, every=args.chart == "all"):
                print(f"draftbench: {line}", file=sys.stderr)
        else:
            title = args.title or f"Draftbench report: {len(rows)} runs"
            print(write_report(rows, Path(args.out), title, args.db))
    except (ExportError, OSError, ValueError) as exc:
        print(f"draftbench: {exc}", file=sys.stderr)
        return 2
    except store.DatabaseError as exc:
        print(f"draftbench: the results database cannot be used: {store.explain(exc)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] not in (["export"], ["report"]):
        sys.exit("usage: python -m app.exports export|report [options]")
    sys.exit(main(sys.argv[1:]))
