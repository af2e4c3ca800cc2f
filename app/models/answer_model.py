"""The Compare page's answer as a Qt table model: per target x workload x concurrency, each
method's best configuration (workbench.analysis.answer.AnswerRow, a column's key its field), its
speedup ± 95% interval and noise verdict, the fastest in bold."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from app.models.columns import header as column_header
from app.models.runs_model import RowsModel
from workbench import report
from workbench.analysis.answer import AnswerRow
from workbench.report import palette

COLUMNS = [
    ("target_short", "Target", "The served model (hover for its full path)"),
    ("workload", "Workload", "Prompt set"),
    ("concurrency", "Conc.", "Requests in flight at once"),
    ("config", "Best configuration", "The method at the N with the highest mean output tokens/s here"),
    ("speedup", "Speedup ± 95%", "Output tokens/s / the matching baseline's; ± is a 95% confidence interval "
                                 "over repeats (none for a single run)"),
    ("verdict", "Noise", "'beyond noise' when the 95% interval excludes 1.0; repeats >= 2 give an interval"),
    ("tok_s", "tok/s", "Mean output tokens/s of the configuration"),
    ("baseline_tok_s", "Baseline tok/s", "The no-speculation baseline's mean output tokens/s, same conditions"),
    ("mal", "MAL", "Mean acceptance length = 1 + accepted / drafts"),
    ("repeats", "Repeats", "Runs averaged"),
    ("cv", "CV", "Coefficient of variation of the repeats' throughput (stdev / mean). repeats = \"auto\" repeats "
                 "a configuration until its 95% interval is within ±2% (at most 5 times)"),
]
FORMATS = {"tok_s": "{:.1f}", "baseline_tok_s": "{:.1f}", "mal": "{:.2f}", "cv": "{:.1%}"}


class AnswerModel(RowsModel[AnswerRow]):
    columns = COLUMNS

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        key = COLUMNS[index.column()][0]
        row = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            if key == "speedup":
                return report.speedup_text(row)
            if key == "config" and row.fastest:
                return f"{row.config} — {row.fastest_note or 'fastest'}"
            return report.cell(row, key, FORMATS.get(key, "{}"))
        if role == Qt.ItemDataRole.UserRole:
            return getattr(row, key)  # the column's key is the field it shows
        if role == Qt.ItemDataRole.DecorationRole and key == "config":
            return QColor(palette.colour(row.method, row.n))
        if role == Qt.ItemDataRole.FontRole and row.fastest_sure:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole:
            return row.target if key == "target_short" else row.command
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt's name
                   role: int = Qt.ItemDataRole.DisplayRole) -> str | None:
        return column_header(COLUMNS, section, orientation, role)
