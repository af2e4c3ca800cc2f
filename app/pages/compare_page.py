"""The Compare page: chosen runs side by side against their baselines, with exports."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox, QFileDialog, QGridLayout, QHBoxLayout, QHeaderView, QLabel, QMessageBox, QPushButton, QSpinBox,
    QSplitter, QTableView, QVBoxLayout, QWidget,
)

from app.widgets import charts as chartlib
from app.widgets.provenance_note import ProvenanceNote
from app.exports import CHART_NAMES, DATA_OF, all_data, write_report
from app.models.runs_model import RowsModel
from workbench import report
from workbench.analysis import compare

TIPS = {
    "best_n": "The N with the highest mean output tokens/s for this method, workload and concurrency",
    "speedup": "Output tokens/s / the matching baseline's; ± is a 95% confidence interval over repeats, "
               "marked 'within noise' when it includes 1.0",
    "mal": "Mean acceptance length = 1 + accepted / drafts",
    "acceptance_rate": "Accepted draft tokens / drafted tokens",
    "efficiency": "Speedup / MAL: the share of the ideal gain that was realised",
    "baseline_tok_s": "The no-speculation baseline's mean output tokens/s under the same conditions",
}


class SpeedupModel(RowsModel):
    columns = report.TABLE_COLUMNS

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        key, _, fmt = report.TABLE_COLUMNS[index.column()]
        row = self._rows[index.row()]
        if role == Qt.DisplayRole:
            return report.shown(row, key, fmt)
        if role == Qt.UserRole:
            return row.get(key)
        if role == Qt.ToolTipRole and key == "target":
            return row.get(key)
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal or not 0 <= section < len(report.TABLE_COLUMNS):
            return None
        key, label, _ = report.TABLE_COLUMNS[section]
        if role == Qt.DisplayRole:
            return label
        if role == Qt.ToolTipRole:
            return TIPS.get(key)
        return None


class ComparePage(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[dict] = []
        self.db_path: Path | None = None
        self.data: dict = {}
        self.title = QLabel("Choose runs in History (Compare selected, or Compare experiment).")
        self.title.setWordWrap(True)
        self.plots = {name: chartlib.new_plot(name) for name in CHART_NAMES}
        grid = QGridLayout()
        for i, name in enumerate(CHART_NAMES):
            grid.addWidget(self.plots[name], i // 4, i % 4)
        self.table_model = SpeedupModel(self)
        self.table = QTableView()
        self.table.setModel(self.table_model)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setToolTip("Best N per target, method, workload and concurrency, as in the reference study")
        self.width_box = QSpinBox(minimum=16, maximum=20000, value=1200, suffix=" px")
        self.height_box = QSpinBox(minimum=16, maximum=20000, value=800, suffix=" px")
        self.dpi_box = QSpinBox(minimum=30, maximum=2400, value=150, suffix=" dpi")
        export_button = QPushButton("Export charts and data…")
        export_button.setToolTip("Every chart as PNG (this size and DPI), SVG and PDF, and its data as CSV and JSON (Ctrl+E)")
        export_button.setShortcut("Ctrl+E")
        export_button.clicked.connect(self.export_dialog)
        report_button = QPushButton("HTML report…")
        report_button.setToolTip("A self-contained report: charts, the speedup table, exact vLLM commands and versions")
        report_button.clicked.connect(self.report_dialog)
        self.partial_box = QCheckBox("Count partial runs")
        self.partial_box.setToolTip("Runs whose requests partly failed in the window are left out of every "
                                    "speedup and chart unless this is ticked")
        self.partial_box.toggled.connect(lambda _: self.set_runs(self.rows, self.db_path))
        bar = QHBoxLayout()
        bar.addWidget(self.title, 1)
        bar.addWidget(self.partial_box)
        for label, w in (("PNG width", self.width_box), ("height", self.height_box), ("", self.dpi_box)):
            if label:
                bar.addWidget(QLabel(label))
            bar.addWidget(w)
        bar.addWidget(export_button)
        bar.addWidget(report_button)
        charts = QWidget()
        charts.setLayout(grid)
        split = QSplitter()
        split.setOrientation(Qt.Vertical)
        split.addWidget(charts)
        split.addWidget(self.table)
        split.setSizes([620, 220])
        self.provenance_note = ProvenanceNote()
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.provenance_note)
        layout.addWidget(split, 1)

    def set_runs(self, rows: list[dict], db_path: Path | None = None) -> None:
        self.rows = rows
        self.db_path = db_path
        cs, self.data = all_data(rows, db_path, self.partial_box.isChecked())
        for name, plot in self.plots.items():
            chartlib.draw(plot, name, self.data)
        self.table_model.set_rows(compare.speedup_table(cs))
        self.provenance_note.show_for(rows)
        done = sum(1 for r in rows if r["status"] == "completed")
        experiments = sorted({r["experiment_id"] for r in rows})
        partial = sum(1 for r in rows if r["status"] == "partial")
        note = ""
        if partial:
            note = f" · {partial} partial run(s) {'counted' if self.partial_box.isChecked() else 'left out'}"
        self.title.setText(f"<b>{done}</b> completed runs ({len(rows)} chosen) from experiment "
                           f"{', '.join(map(str, experiments))}{note}")

    def export_to(self, folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, plot in self.plots.items():
            for suffix in ("png", "svg", "pdf"):
                path = folder / f"{name}.{suffix}"
                chartlib.export(plot, path, self.width_box.value(), self.height_box.value(), self.dpi_box.value())
                written.append(path)
            for suffix, writer in (("csv", report.write_csv), ("json", report.write_json)):
                path = folder / f"{name}.{suffix}"
                writer(self.data[DATA_OF[name]], path)
                written.append(path)
        return written

    def export_dialog(self) -> None:
        if not self.rows:
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
        if not self.rows:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save report", "draftbench-report.html", "HTML (*.html)")
        if path:
            try:
                write_report(self.rows, Path(path), f"Draftbench comparison: {len(self.rows)} runs", self.db_path)
            except OSError as exc:
                QMessageBox.warning(self, "Report", str(exc))
