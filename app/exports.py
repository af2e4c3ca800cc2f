"""`draftbench export` and `draftbench report`: the Compare charts, their data and an HTML report,
written without a display (Qt's offscreen platform) from one CompareView
(workbench.usecases.compare_view). The options come parsed and checked, as one ExportOptions, from
workbench.cli.export: handed in by app.entry, or as JSON to the child process `python -m app.exports`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from workbench import report, store
from workbench.report.rows import Exportable
from workbench.usecases import compare_view
from workbench.usecases.chart_names import ALL_CHARTS, WHAT_IF_CHART_NAMES
from workbench.usecases.compare_view import CompareView, select
from workbench.usecases.export_options import ExportError, ExportOptions

if TYPE_CHECKING:  # Qt is loaded only when charts are drawn
    from PySide6.QtCore import QCoreApplication

WHAT_IF_TABLE = "what_if_table"  # the what-if table's file name, apart from speedup_table (measured only)


def _app() -> QCoreApplication:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    # Deferred: Qt is loaded only when charts are drawn, so reading the data (compare_view) stays headless
    from PySide6.QtWidgets import QApplication

    from app.widgets import theme

    app = QApplication.instance() or QApplication(sys.argv[:1])
    theme.apply()
    return app


def export_all(view: CompareView, out: Path, formats: list[str] | tuple[str, ...], charts: list[str] | tuple[str, ...],
               width: int, height: int, dpi: int) -> list[Path]:
    """Every chosen chart that has data in every chosen format, its data as CSV/JSON, and the answer
    table; a chart without data is not written (`not_drawn` says why)."""
    # Deferred: the charts load Qt and pyqtgraph, which only drawing needs
    from app.widgets import chart_export, charts as chartlib

    _app()
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name in charts:
        if name not in view.drawable:
            continue
        for fmt in formats:
            path = out / f"{name}.{fmt}"
            if fmt in ("png", "svg", "pdf"):
                w = chartlib.new_plot(name)
                chartlib.draw(w, name, view.data, view.caption)
                chart_export.export(w, path, width, height, dpi)
                w.deleteLater()
            elif fmt == "csv":
                report.write_csv(view.data.rows(name), path)
            elif fmt == "json":
                report.write_json(view.data.rows(name), path)
            written.append(path)
    tables: list[tuple[str, Sequence[Exportable]]] = [("speedup_table", view.speedups)]
    if view.what_if:  # its own file: what-if rows never join the measured table
        tables.append((WHAT_IF_TABLE, view.what_if))
    for name, table in tables:
        for fmt in formats:
            if fmt in ("csv", "json"):
                path = out / f"{name}.{fmt}"
                (report.write_csv if fmt == "csv" else report.write_json)(table, path)
                written.append(path)
    return written


def not_drawn(view: CompareView, charts: list[str] | tuple[str, ...], every: bool = False) -> list[str]:
    """One line per chosen chart without data: which, and why. With `every` (--chart all), a what-if
    chart only where there are what-if runs: a measured experiment is not missing one."""
    # Deferred: why a chart is empty is said with the drawing code, which loads pyqtgraph
    from app.widgets import charts as chartlib

    return [f"{name} not drawn: {chartlib.EMPTY[name]}" for name in charts
            if name not in view.drawable and (view.tally.what_if or not every or name not in WHAT_IF_CHART_NAMES)]


REPORT_SIZE = (760, 480)  # shown about 560 px wide: text stays readable


def _runs(view: CompareView) -> list[store.RunRecord]:
    """The runs the report lists, a pinned baseline from another experiment among them: its command,
    versions and provenance belong beside the speedups taken against it."""
    pinned = view.pinned_row
    if pinned is None or any(r.id == pinned.id for r in view.rows):
        return list(view.rows)
    return [*view.rows, pinned]


def write_report(view: CompareView, path: Path, title: str) -> Path:
    # Deferred: the charts load Qt and pyqtgraph, which only drawing needs
    from app.widgets import chart_export, charts as chartlib

    _app()
    figures: list[tuple[str, str]] = []  # (title, SVG text)
    missing: list[tuple[str, str]] = []  # (title, why)
    what_if_figures: list[tuple[str, str]] = []
    for name in ALL_CHARTS:
        if name not in view.drawable:
            if name not in WHAT_IF_CHART_NAMES:
                missing.append((chartlib.CHARTS[name][0], chartlib.EMPTY[name]))
            continue
        w = chartlib.new_plot(name)
        chartlib.draw(w, name, view.data, view.caption)
        # The chart's own title (a what-if one names the imposed curve's source) captions it, and
        # only there: drawn into the image as well, every title read twice.
        title_of = w.getPlotItem().titleLabel.text
        w.getPlotItem().setTitle(None)
        chart_export.lay_out(w, *REPORT_SIZE)
        (what_if_figures if name in WHAT_IF_CHART_NAMES else figures).append((title_of, chart_export.svg_text(w)))
        w.deleteLater()
    path.write_text(report.render(report.Report(
        title=title, conditions=view.caption, answer=view.answer, crossovers=view.crossovers,
        speedups=view.speedups, why_none_pays=view.none_pays, trust=view.trust,
        charts=figures, not_drawn=missing, runs=sorted(_runs(view), key=lambda r: r.id),
        what_if=view.what_if, what_if_sentences=view.what_if_sentences,
        what_if_source=view.what_if_source, what_if_charts=what_if_figures,
        baseline_note=view.baseline_sentences)), encoding="utf-8")
    return path


def main(options: ExportOptions) -> int:
    """Draws what `options` ask for; one line and 2 for a selection that cannot be drawn."""
    try:
        rows = select(options.db, options.experiment, list(options.runs))
        view = compare_view.build(rows, options.db, pinned=options.baseline)
        if options.verb == "export":
            for path in export_all(view, Path(options.out), options.formats, options.charts, options.width,
                                   options.height, options.dpi):
                print(path)
            for line in not_drawn(view, options.charts, every=options.every_chart):
                print(f"draftbench: {line}", file=sys.stderr)
        else:
            title = options.title or f"Draftbench report: {len(rows)} runs"
            print(write_report(view, Path(options.out), title))
    except (ExportError, OSError, ValueError) as exc:
        print(f"draftbench: {exc}", file=sys.stderr)
        return 2
    except store.DatabaseError as exc:
        print(f"draftbench: the results database cannot be used: {store.explain(exc)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    # The child that workbench.cli.export starts: its one argument is ExportOptions.to_json's.
    if len(sys.argv) != 2:
        sys.exit("usage: python -m app.exports OPTIONS_JSON (as workbench.cli.export writes it)")
    try:
        chosen = ExportOptions.from_json(sys.argv[1])
    except ExportError as exc:
        sys.exit(f"draftbench: {exc}")
    sys.exit(main(chosen))
