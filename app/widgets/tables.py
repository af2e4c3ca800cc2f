"""Lists of records as the Models page shows them: a model with (field, header, formatter) columns,
its table view, a titled box with the button that acts on the selection, and the line a list
shows while it is empty."""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (QAbstractItemView, QGroupBox, QHBoxLayout, QHeaderView, QLabel, QTableView,
                               QVBoxLayout, QWidget)

from app.models.runs_model import RowsModel


class TableModel(RowsModel[Any]):
    """Records (frozen dataclasses) shown through (field, header, formatter) columns; `tooltip(row)`
    is what hovering a row shows (None: nothing)."""

    def __init__(self, columns: list[tuple[str, str, Callable[[Any], str] | None]],
                 tooltip: Callable[[Any], str | None] | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.columns = columns
        self.tooltip = tooltip

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> str | None:
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        name, _, fmt = self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            value = getattr(row, name)
            return "" if value is None else (fmt(value) if fmt else str(value))
        if role == Qt.ItemDataRole.ToolTipRole and self.tooltip is not None:
            return self.tooltip(row)
        return None

    def update_row(self, i: int, row: Any) -> None:
        """Change one row in place, keeping the view's selection."""
        self._rows[i] = row
        self.dataChanged.emit(self.index(i, 0), self.index(i, len(self.columns) - 1))

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt's name
                   role: int = Qt.ItemDataRole.DisplayRole) -> str | None:
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole
                and 0 <= section < len(self.columns)):
            return self.columns[section][1]
        return None


def table(model: TableModel) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.verticalHeader().hide()
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    view.horizontalHeader().setStretchLastSection(True)
    return view


def listed(title: str, view: QWidget, button: QWidget) -> QGroupBox:
    """A titled box: a list, and under it at the right the button that acts on its selection."""
    box = QGroupBox(title)
    v = QVBoxLayout(box)
    v.addWidget(view, 1)
    row = QHBoxLayout()
    row.addStretch(1)
    row.addWidget(button)
    v.addLayout(row)
    return box


class EmptyHint(QObject):
    """A line across an empty list saying what it shows and how to fill it (an empty grid alone
    tells a newcomer nothing); gone as soon as the list has a row."""

    def __init__(self, view: QTableView, text: str):
        super().__init__(view)
        self.view = view
        self.label = QLabel(text, view.viewport())
        self.label.setWordWrap(True)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setStyleSheet("color: #777;")
        view.viewport().installEventFilter(self)
        model = view.model()
        for signal in (model.modelReset, model.rowsInserted, model.rowsRemoved):
            signal.connect(self.update)
        self.update()

    def update(self) -> None:
        self.label.setVisible(self.view.model().rowCount() == 0)
        self.label.setGeometry(self.view.viewport().rect().adjusted(12, 0, -12, 0))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Resize:
            self.update()
        return False
