"""The Compare page's All figures table: every figure of every configuration, each method's best N
in bold, what-if rows (when let in) in italics, a tip on every column header."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

from app.models.runs_model import RowsModel
from workbench import report
from workbench.analysis.compare import Figures

TIPS = {
    "best_n": "The N with the highest mean output tokens/s for this method, workload and concurrency",
    "n": "The number of speculative tokens; the best N of each method, workload and concurrency in bold",
    "speedup": "Output tokens/s / the matching baseline's; ± is a 95% confidence interval over repeats, "
               "marked 'within noise' when it includes 1.0",
    "mal": "Mean acceptance length = 1 + accepted / drafts",
    "acceptance_rate": "Accepted draft tokens / drafted tokens",
    "efficiency": "Speedup / MAL: the share of the ideal gain that was realised",
    "baseline_tok_s": "The no-speculation baseline's mean output tokens/s under the same conditions",
    "cv": "Coefficient of variation of the repeats' throughput (stdev / mean)", **report.LATENCY_TIPS,
}

# "All figures" lists every N (the best of each method x workload x concurrency in bold): `draftbench
# show`'s columns with N for best N, the MAL both ways, and what each speedup costs in latency.
ALL_COLUMNS = report.ALL_FIGURES_COLUMNS


class SpeedupModel(RowsModel[Figures]):
    """Every figure of every configuration, its method's best N in bold."""
    columns = ALL_COLUMNS

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        key, _, fmt = ALL_COLUMNS[index.column()]
        row = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return report.shown(row, key, fmt)
        if role == Qt.ItemDataRole.UserRole:
            return getattr(row, key)  # the column's key is the field it shows
        if role == Qt.ItemDataRole.ToolTipRole and key == "target":
            return row.target
        if role == Qt.ItemDataRole.FontRole and (row.what_if or row.best):
            font = QFont()  # a what-if row (let in by the user's tick) in italics; the best N in bold
            font.setItalic(row.what_if)
            font.setBold(row.best)
            return font
        if row.what_if:
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"what-if, acceptance imposed: {row.imposed_source} (dummy weights, not measured)"
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt's name
                   role: int = Qt.ItemDataRole.DisplayRole) -> str | None:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(ALL_COLUMNS):
            return None
        key, label, _ = ALL_COLUMNS[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return label
        if role == Qt.ItemDataRole.ToolTipRole:
            return TIPS.get(key)
        return None
