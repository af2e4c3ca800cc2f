"""The Compare page, answer first: each method's best configuration per target x workload x
concurrency with its interval and noise verdict, where speculation stops paying, and the command
that serves the chosen configuration; below, one large chart with a chooser, and exports. What-if
runs (dummy weights, acceptance imposed) are in a section of their own (app.widgets.what_if_panel),
never in the answer, and in the measured table only when the user ticks for them.

Everything shown is one CompareView (workbench.usecases.compare_view), built on the app's worker
each time the selection, the partial-runs tick or History's pinned baseline changes, since it reads
the results file; the page only renders it."""

from __future__ import annotations

import dataclasses
import html
import sys
from pathlib import Path

from PySide6.QtCore import QAbstractItemModel, Qt
from PySide6.QtGui import QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QFileDialog, QFrame, QHBoxLayout, QHeaderView, QLabel, QMessageBox,
    QPushButton, QScrollArea, QSplitter, QTableView, QTabWidget, QVBoxLayout, QWidget,
)

from app.exports import WHAT_IF_TABLE, write_report
from app.jobs import worker
from app.models.answer_model import AnswerModel
from app.models.speedup_model import ALL_COLUMNS, SpeedupModel  # noqa: F401 - ALL_COLUMNS read from here
from app.pages import history_views
from app.widgets import chart_export, charts as chartlib
from app.widgets.baseline_note import BaselineNote
from app.widgets.compare_parts import ChartPane, ExportBar
from app.widgets.provenance_note import ProvenanceNote
from app.widgets.what_if_panel import WhatIfPanel
from workbench import report, store
from workbench.analysis.answer import AnswerRow
from workbench.analysis.pinned_baseline import PinnedBaselineError
from workbench.usecases import compare_view
from workbench.usecases.chart_names import ALL_CHARTS, CHART_NAMES
from workbench.usecases.compare_view import ChartData, CompareView

EMPTY_TITLE = "Nothing to compare yet: run a sweep (Experiment page), or choose runs in History."


def build_view(rows: list[store.RunRecord], db_path: Path | None, include_partial: bool, pinned: int | None) -> CompareView:
    """The view against the pinned run; a pin that cannot be the baseline (History pins any run, and
    a pinned run can be deleted or fail a rerun) is said in the baseline note, and each experiment's
    own baseline used instead of showing nothing."""
    try:
        return compare_view.build(rows, db_path, include_partial, pinned)
    except PinnedBaselineError as exc:
        view = compare_view.build(rows, db_path, include_partial)
        return dataclasses.replace(view, pinned_note=f"The pinned baseline is not used ({exc}), so speedups are "
                                                     "against each experiment's own baseline.")


def _table(model: QAbstractItemModel) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    view.horizontalHeader().setStretchLastSection(True)
    view.verticalHeader().setVisible(False)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    return view


class ComparePage(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[store.RunRecord] = []
        self.db_path: Path | None = None
        self.view: CompareView = compare_view.build([])
        self._views = worker.Latest()  # an older view answering late is not shown
        self.building = False  # a view is being built on the worker
        self.title = QLabel(EMPTY_TITLE)
        self.title.setWordWrap(True)
        self.partial_box = QCheckBox("Count partial runs")
        self.partial_box.setToolTip("Runs whose requests partly failed in the window are left out of every "
                                    "speedup and chart unless this is ticked")
        self.partial_box.toggled.connect(lambda _: self.set_runs(self.rows, self.db_path))
        self.what_if_box = QCheckBox("Include what-if rows in the measured table")
        self.what_if_box.setToolTip("What-if runs (dummy weights, acceptance imposed) are kept out of the measured "
                                    "table (All figures) unless this is ticked; they are never in the answer "
                                    "above, and are always in the what-if section")
        self.what_if_box.toggled.connect(lambda _: self._fill_table())
        self.what_if = WhatIfPanel()
        self.what_if.setVisible(False)

        self.answer_model = AnswerModel(self)
        self.answer = _table(self.answer_model)
        self.answer.setMinimumHeight(150)
        self.answer.setToolTip("Each method at its best N, per target, workload and concurrency; the fastest in bold")
        self.answer.selectionModel().selectionChanged.connect(self._chosen)
        self.crossover = QLabel("")
        self.crossover.setWordWrap(True)
        self.baseline_note = BaselineNote()  # its run_again is the main window's to answer
        self.copy_button = QPushButton("Copy serve command")
        self.copy_button.setToolTip("The exact `vllm serve … --speculative-config …` of the chosen configuration, "
                                    "as it was measured (port 8000), to the clipboard")
        self.copy_button.clicked.connect(self.copy_command)
        self.copy_button.setEnabled(False)
        self.command = QLabel("")
        self.command.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.command.setWordWrap(True)
        serve = QHBoxLayout()
        serve.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignTop)
        serve.addWidget(self.command, 1)

        self.charts = ChartPane()
        # The pane's parts under the names the page's methods (and its tests) read them by.
        self.plots, self.stack, self.chooser = self.charts.plots, self.charts.stack, self.charts.chooser
        self.missing = self.charts.missing
        self.chooser.currentIndexChanged.connect(self._show_chart)

        self.table_model = SpeedupModel(self)
        self.table = _table(self.table_model)
        self.table.setToolTip("Best N per target, method, workload and concurrency, with every figure "
                              "(what `draftbench show` prints)")
        self.below = QTabWidget()
        self.below.addTab(self.charts, "Charts")
        self.below.addTab(self.table, "All figures")

        self.exports = ExportBar()
        self.width_box, self.height_box, self.dpi_box = (self.exports.width_box, self.exports.height_box,
                                                         self.exports.dpi_box)
        self.exports.export_button.clicked.connect(self.export_dialog)
        self.exports.report_button.clicked.connect(self.report_dialog)
        bar = QHBoxLayout()
        bar.addWidget(self.title, 1)
        bar.addWidget(self.partial_box)
        bar.addWidget(self.what_if_box)

        top = QWidget()
        top_box = QVBoxLayout(top)
        top_box.setContentsMargins(0, 0, 0, 0)
        top_box.addWidget(self.answer, 1)
        top_box.addWidget(self.baseline_note)
        top_box.addWidget(self.crossover)
        top_box.addLayout(serve)
        # A splitter sizes its part without asking how tall the wrapped notes under the answer need
        # to be, so a short window drew them over the table: in a scroll area the part scrolls instead.
        top_scroll = QScrollArea(widgetResizable=True)
        top_scroll.setFrameShape(QFrame.Shape.NoFrame)
        top_scroll.setWidget(top)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top_scroll)
        split.addWidget(self.below)
        split.addWidget(self.what_if)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 3)
        split.setSizes([280, 520, 420])
        self.split = split
        self.provenance_note = ProvenanceNote()
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.provenance_note)
        layout.addWidget(split, 1)
        layout.addWidget(self.exports)

    # --- what is shown ----------------------------------------------------------------------
    @property
    def data(self) -> ChartData:
        return self.view.data

    @property
    def caption(self) -> str:
        return self.view.caption

    def set_runs(self, rows: list[store.RunRecord], db_path: Path | None = None) -> None:
        """Shows `rows` once their view is built, on the worker (it reads the results file), against
        the baseline pinned in History for this results file, if any."""
        self.rows = rows
        self.db_path = db_path
        self.building = True
        partial = self.partial_box.isChecked()
        pinned = history_views.pinned_baseline(db_path) if db_path is not None and rows else None
        self._views.run(lambda: build_view(rows, db_path, partial, pinned), self, self._built, self._not_built)

    def repin(self) -> None:
        """The same runs again, after History pinned or unpinned a baseline."""
        if self.rows:
            self.set_runs(self.rows, self.db_path)

    def _built(self, view: CompareView) -> None:
        self.building = False
        self.show_view(view)

    def _not_built(self, exc: BaseException) -> None:
        self.building = False
        self.show_view(compare_view.build([]))
        if isinstance(exc, (store.StoreError, store.DatabaseError)):
            self.title.setText(html.escape(f"These runs cannot be compared: {exc}"))
        else:  # a fault of the page's own, which the app's hook reports
            sys.excepthook(type(exc), exc, exc.__traceback__)

    def show_view(self, view: CompareView) -> None:
        """Renders `view`: nothing is computed here."""
        self.view = view
        for name, plot in self.plots.items():
            chartlib.draw(plot, name, view.data, view.caption)
        self._fill_table()
        self.what_if.set_view(view)
        self.what_if_box.setEnabled(view.what_if_configs)
        self.provenance_note.show_differences(view.provenance)
        self.answer_model.set_rows(view.answer)
        text = ("<b>Where speculation stops paying</b>: " + "; ".join(c.text for c in view.crossovers)
                if view.crossovers else "")
        if view.none_pays:
            text = "<br>".join(filter(None, [text, *(html.escape(line) for line in view.none_pays)]))
        # Notes on the answer's figures: said only where there is an answer to trust.
        if view.trust and view.answer:
            text = "<br>".join(filter(None, [text, "<b>Before trusting these figures</b>: "
                                             + "; ".join(html.escape(line) for line in view.trust)]))
        if not view.answer and view.what_if:
            text = "No measured speculative run here: every one is a what-if run (acceptance imposed), below."
        self.crossover.setText(text)
        self.crossover.setVisible(bool(text))
        if view.pinned_note:
            self.baseline_note.show_pinned(" ".join(view.baseline_sentences))
        else:
            self.baseline_note.show_reason(view.no_baseline, view.tally.experiments)
        self._fill_chooser()
        fastest = next((i for i, r in enumerate(view.answer) if r.fastest), 0 if view.answer else None)
        if fastest is not None:
            self.answer.selectRow(fastest)
        else:
            self.command.setText("")
            self.copy_button.setEnabled(False)
        self._say_title()

    def _fill_table(self) -> None:
        """The measured table; what-if rows after it, marked, only when the user ticks for them."""
        rows = list(self.view.measured_table)
        if self.what_if_box.isChecked():
            rows += self.view.what_if_table
        self.table_model.set_rows(rows)

    def _say_title(self) -> None:
        t = self.view.tally
        if not t.runs:
            self.title.setText(EMPTY_TITLE)
            return
        note = ""
        if t.partial:
            note += f" · {t.partial} partial run(s) {'counted' if self.view.include_partial else 'left out'}"
        if t.failed:
            note += f" · {t.failed} failed"
        if t.what_if:
            note += f" · {t.what_if} what-if run(s) (acceptance imposed: {self.what_if.source or '?'}), apart below"
        self.title.setText(f"Experiment {', '.join(map(str, t.experiments))}: <b>{t.completed}</b> of {t.runs} runs "
                           f"completed{note} · {self.view.caption}")

    def _fill_chooser(self) -> None:
        current = self.chooser.currentData()
        self.chooser.blockSignals(True)
        self.chooser.clear()
        for name in CHART_NAMES:
            if name in self.view.drawable:
                self.chooser.addItem(chartlib.CHARTS[name][0], name)
        self.chooser.blockSignals(False)
        missing = [f"{chartlib.CHARTS[n][0]}: {chartlib.EMPTY[n]}" for n in CHART_NAMES if n in self.view.missing]
        self.missing.setText(("Not drawn — " + "; ".join(missing)) if missing and self.view.rows else "")
        self.missing.setToolTip("\n".join(missing))
        keep = self.chooser.findData(current)
        self.chooser.setCurrentIndex(keep if keep >= 0 else 0)
        self._show_chart()

    def _show_chart(self, *_: object) -> None:
        name = self.chooser.currentData()
        self.stack.setVisible(name is not None)
        if name:
            self.stack.setCurrentWidget(self.plots[name])

    def show_chart(self, name: str) -> None:
        self.chooser.setCurrentIndex(self.chooser.findData(name))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        for plot in self.plots.values():
            chartlib.fit_legend(plot, max(self.stack.height(), 200))

    # --- the serve command ------------------------------------------------------------------
    def chosen(self) -> AnswerRow | None:
        selected = self.answer.selectionModel().selectedRows()
        return self.answer_model.row(selected[0].row()) if selected else None

    def _chosen(self, *_: object) -> None:
        row = self.chosen()
        self.copy_button.setEnabled(row is not None)
        self.command.setText(f"<code>{row.command}</code>" if row else "")

    def copy_command(self) -> None:
        row = self.chosen()
        if row and row.command:
            QGuiApplication.clipboard().setText(row.command)

    # --- exports ----------------------------------------------------------------------------
    def export_to(self, folder: Path) -> list[Path]:
        """Every chart with data: PNG/SVG/PDF at the chosen size, its data as CSV and JSON."""
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        view = self.view
        for name in ALL_CHARTS:
            if name not in view.drawable:
                continue
            w = chartlib.new_plot(name)  # drawn apart, so the page's chart keeps its size
            chartlib.draw(w, name, view.data, view.caption)
            for suffix in ("png", "svg", "pdf"):
                path = folder / f"{name}.{suffix}"
                chart_export.export(w, path, self.width_box.value(), self.height_box.value(), self.dpi_box.value())
                written.append(path)
            w.deleteLater()
            for suffix, writer in (("csv", report.write_csv), ("json", report.write_json)):
                path = folder / f"{name}.{suffix}"
                writer(view.data.rows(name), path)
                written.append(path)
        if view.what_if:  # the what-if table in files of its own, never the measured one's
            for suffix, writer in (("csv", report.write_csv), ("json", report.write_json)):
                path = folder / f"{WHAT_IF_TABLE}.{suffix}"
                writer(view.what_if, path)
                written.append(path)
        return written

    def export_dialog(self) -> None:
        if not self.view.rows:
            return
        folder = QFileDialog.getExistingDirectory(self, "Export charts and data into")
        if folder:
            try:
                written = self.export_to(Path(folder))
            except (OSError, ValueError) as exc:
                QMessageBox.warning(self, "Export", str(exc))
                return
            QMessageBox.information(self, "Export", f"Wrote {len(written)} files to {folder}")

    def report_dialog(self) -> None:
        view = self.view
        if not view.rows:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save report", "draftbench-report.html", "HTML (*.html)")
        if path:
            try:
                if view.include_partial:
                    # The report counts completed runs only, as `draftbench report` does, whatever the tick.
                    pinned = view.pinned_row.id if view.pinned_row else None
                    view = build_view(view.rows, view.db_path, False, pinned)
                write_report(view, Path(path), f"Draftbench comparison: {len(view.rows)} runs")
            except OSError as exc:
                QMessageBox.warning(self, "Report", str(exc))
