"""The Compare page's what-if section: runs served with dummy weights and an imposed acceptance, in a
box of their own below the measured answer, never in it. Their table says what a speculative step
costs and where it pays (MAL read back against imposed, step cost, break-even MAL and p1), the
sentences say it in words, and the break-even chart draws speedup against position-1 acceptance."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView, QGroupBox, QHeaderView, QLabel, QSplitter, QTableView, QVBoxLayout, QWidget,
)

from app.models.runs_model import RowsModel
from app.widgets import charts as chartlib
from workbench import report
from workbench.analysis.breakeven import BreakEvenRow
from workbench.report import palette
from workbench.usecases.compare_view import CompareView

TITLE = "What-if (acceptance imposed)"
NOTE = ("Served with dummy weights and an imposed per-position acceptance (acceptance imposed: {source}): these "
        "runs measure what a speculative step costs at these shapes, N and concurrencies, not what a real draft "
        "achieves. They are not in the answer or the table above. Hover a column for its definition.")
STEP_COST_TIP = report.WHAT_IF_TIPS["step_cost"]
BREAK_EVEN_TIP = report.WHAT_IF_TIPS["break_even_p1"]


class WhatIfModel(RowsModel[BreakEvenRow]):
    """The what-if table (workbench.analysis.breakeven.rows), as `draftbench show` prints it."""
    columns = report.WHAT_IF_COLUMNS

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """The cell in `role`: its text, its field's value (UserRole), a swatch, a font or a tip."""
        if not index.isValid():
            return None
        key, _, fmt = report.WHAT_IF_COLUMNS[index.column()]
        row: BreakEvenRow = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return report.speedup_text(row) if key == "speedup" else report.what_if_cell(row, key, fmt)
        if role == Qt.ItemDataRole.UserRole:
            return getattr(row, key)  # the column's key is the field it shows
        if role == Qt.ItemDataRole.DecorationRole and key == "config":
            return QColor(palette.lighter(palette.colour(row.method, row.n), 0.35))
        if role == Qt.ItemDataRole.FontRole:
            font = QFont()
            font.setItalic(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole:
            if key == "target":
                return row.target
            return report.WHAT_IF_TIPS.get(key) or f"acceptance imposed: {row.imposed_source}"
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt's name
                   role: int = Qt.ItemDataRole.DisplayRole) -> str | None:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(report.WHAT_IF_COLUMNS):
            return None
        key, label, _ = report.WHAT_IF_COLUMNS[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return label
        if role == Qt.ItemDataRole.ToolTipRole:
            return report.WHAT_IF_TIPS.get(key)
        return None


class WhatIfPanel(QGroupBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(TITLE, parent)
        # A dashed amber frame: the section reads as apart from the measured one at a glance.
        self.setObjectName("whatIf")
        self.setStyleSheet("QGroupBox#whatIf { border: 2px dashed #8C6D00; border-radius: 4px; margin-top: 1.2em; "
                           "padding-top: 0.4em; } QGroupBox#whatIf::title { color: #8C6D00; font-weight: bold; "
                           "subcontrol-origin: margin; left: 8px; }")
        self.setToolTip("What-if runs: dummy weights and an imposed acceptance curve; never in the measured "
                        "answer, table or recommendation")
        self.note = QLabel("")
        self.note.setWordWrap(True)
        self.model = WhatIfModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setToolTip(f"Step cost: {STEP_COST_TIP}.\nBreak-even: {BREAK_EVEN_TIP}")
        self.sentences = QLabel("")
        self.sentences.setWordWrap(True)
        self.sentences.setToolTip(f"From each configuration's step cost at every concurrency run. {BREAK_EVEN_TIP}")
        self.plot = chartlib.new_plot("breakeven")
        self.plot.installEventFilter(self)
        left = QWidget()
        left_box = QVBoxLayout(left)
        left_box.setContentsMargins(0, 0, 0, 0)
        left_box.addWidget(self.table, 1)
        left_box.addWidget(self.sentences)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(self.plot)
        split.setSizes([500, 640])
        layout = QVBoxLayout(self)
        layout.addWidget(self.note)
        layout.addWidget(split, 1)
        self.source = ""

    def set_view(self, view: CompareView) -> bool:
        """Shows the view's what-if rows; False, and hidden, without any."""
        rows = view.what_if
        self.source = view.what_if_source if rows else ""
        self.setTitle(f"What-if (acceptance imposed: {self.source})" if rows else TITLE)
        self.note.setText(NOTE.format(source=self.source) + " " + report.WHAT_IF_ERROR)
        self.model.set_rows(rows)
        sentences = view.what_if_sentences
        # Escaped: the sentences say "c <= 64", which rich text would read as a tag.
        self.sentences.setText("<b>Where it pays</b>: " + html.escape("; ".join(sentences)) if sentences else "")
        chartlib.draw(self.plot, "breakeven", view.data, view.caption)
        self._fit_legend()
        self.setVisible(bool(rows))
        return bool(rows)

    def _fit_legend(self) -> None:
        """As many legend columns as the plot's height needs (taken as at least 200 pixels)."""
        chartlib.fit_legend(self.plot, max(self.plot.height(), 200))

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        # The plot's own resize, not the panel's: the splitters inside resize it after the panel's
        # resizeEvent, so a legend fitted there would use the plot's old height and could end up
        # wider than the plot, pushed out of view.
        if obj is self.plot and event.type() == QEvent.Type.Resize:
            self._fit_legend()
        return False
