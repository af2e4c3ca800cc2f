"""Two runs side by side, field by field: what differs between them, configuration and figures."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QCheckBox, QDialog, QDialogButtonBox, QHBoxLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem,
    QVBoxLayout, QWidget,
)

from app.models.runs_model import HistoryRow
from workbench import store

LONG = 120  # characters of a value shown in its cell; the tooltip has it whole (logs, argv, provenance)
CHANGED = QColor(255, 214, 102, 90)  # a soft amber, readable under the light and the dark theme


def fields(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Every field of either run: the runs table's in its order (the configuration first, then the
    figures), then any other (tags, notes, columns added later), by name."""
    known = [k for k in store.RUN_COLUMNS if k in a or k in b]
    return known + sorted((set(a) | set(b)) - set(known))


def by_name(row: HistoryRow) -> dict[str, Any]:
    """A run's every field by name, as stored (JSON columns as their text), with the reader's tags
    and notes: what the diff lays side by side."""
    return {**row.run.as_dict(), "tags": row.tags, "notes": row.notes}


def shown(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


class RunDiff(QDialog):
    def __init__(self, first: HistoryRow, second: HistoryRow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Run {first.run.id} and run {second.run.id}")
        a, b = by_name(first), by_name(second)
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["Field", _title(first.run), _title(second.run)])
        self.table.verticalHeader().hide()
        # A line a field: some ninety of them, to be read at a glance rather than scrolled through.
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.differing: list[str] = []
        self.names: list[str] = []  # the field each row shows, by row
        bold = QFont(self.font())
        bold.setBold(True)
        for key in fields(a, b):
            left, right = shown(a.get(key)), shown(b.get(key))
            row = self.table.rowCount()
            self.table.insertRow(row)
            self.names.append(key)
            for column, text in enumerate((key, left, right)):
                item = QTableWidgetItem(text if len(text) <= LONG else text[:LONG - 1] + "…")
                item.setToolTip(text if column else store.RUN_COLUMNS.get(key, str).__name__ + " field")
                if left != right:
                    item.setBackground(QBrush(CHANGED))
                    item.setFont(bold)
                self.table.setItem(row, column, item)
            if left != right:
                self.differing.append(key)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.only = QCheckBox("&Differences only")
        self.only.setToolTip("Hide the fields both runs share (Alt+D)")
        self.only.toggled.connect(self.show_differences_only)
        self.count = QLabel(f"{len(self.differing)} of {self.table.rowCount()} fields differ (highlighted)")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        top = QHBoxLayout()
        top.addWidget(self.count)
        top.addStretch(1)
        top.addWidget(self.only)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(1000, 640)  # inside a 1280x800 screen, with room for the window's frame

    def show_differences_only(self, only: bool) -> None:
        for row in range(self.table.rowCount()):
            self.table.setRowHidden(row, only and self.names[row] not in self.differing)

    def visible_fields(self) -> list[str]:
        return [self.names[r] for r in range(self.table.rowCount()) if not self.table.isRowHidden(r)]


def _title(run: store.RunRecord) -> str:
    n = f" N={run.n}" if run.n is not None else ""
    return f"Run {run.id}: {run.method or ''}{n}, {run.workload or ''}"
