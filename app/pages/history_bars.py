"""Three parts of the History page as widgets of their own: the runs' tree view, the filter bar (a
combo per field and the search box) and the actions bar (saved views, the pinned baseline, the
buttons that act on the selection). The page wires them to its model and its actions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QAbstractItemModel, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, QTreeView, QWidget,
)

from app.models.runs_model import HistoryRow
from app.pages.history_views import SavedView, ViewsBar

FILTERS = ("method", "workload", "status", "target")
ANY = "(any)"


def runs_view(model: QAbstractItemModel) -> QTreeView:
    """The runs under their experiments, sortable, several selectable at once."""
    view = QTreeView()
    view.setModel(model)
    view.setSortingEnabled(True)
    view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    view.setUniformRowHeights(True)  # one row height for all: a large history scrolls fast
    view.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    # Column widths from the first rows only: measuring every row of a large history took
    # seconds per refresh (the page refreshes on every run event of a sweep).
    view.header().setResizeContentsPrecision(64)
    view.header().setStretchLastSection(True)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    return view


class FilterBar(QWidget):
    """A combo per field in FILTERS and the search box. `filter_changed(key, value)` when a combo
    changes (value None: any); the search box's own textChanged says when the words change."""

    filter_changed = Signal(str, object)  # the field, and the value wanted or None for any

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combos: dict[str, QComboBox] = {}
        bar = QHBoxLayout(self)
        bar.setContentsMargins(0, 0, 0, 0)
        for key in FILTERS:
            combo = QComboBox()
            combo.setMinimumContentsLength(12)
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setToolTip(f"Show only runs with this {key}")
            combo.currentTextChanged.connect(
                lambda text, k=key: self.filter_changed.emit(k, None if text == ANY else text))
            self.combos[key] = combo
            bar.addWidget(QLabel(key.capitalize()))
            bar.addWidget(combo)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search method, target, workload, status, tags, notes (Ctrl+F)")
        self.search.setToolTip("Show only runs containing every word typed here, in their method, target, "
                               "workload, status, tags or notes (Ctrl+F; Esc clears)")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(160)
        QShortcut(QKeySequence.StandardKey.Find, self, self._focus_search)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self.search, self.search.clear)
        bar.addWidget(self.search, 1)

    def offer(self, rows: Sequence[HistoryRow]) -> None:
        """Each combo lists the values its field takes in `rows`; a value chosen that no row has any
        more goes back to any. Every field's filter is said again, as the page's proxy was reset."""
        for key, combo in self.combos.items():
            current = combo.currentText() or ANY
            values = sorted({str(r.value(key)) for r in rows})
            combo.blockSignals(True)
            combo.clear()
            combo.addItems([ANY] + values)
            combo.setCurrentText(current if current in values else ANY)
            combo.blockSignals(False)
            self.filter_changed.emit(key, None if combo.currentText() == ANY else combo.currentText())

    def chosen(self) -> dict[str, str]:
        """The fields filtered on, and their values."""
        return {key: combo.currentText() for key, combo in self.combos.items()
                if combo.currentText() not in ("", ANY)}

    def choose(self, filters: dict[str, str]) -> None:
        """Shows these filters (any for a field not named): a value no run has any more is added to
        its combo, so a saved view reads as saved (and shows nothing) rather than showing everything."""
        for key, combo in self.combos.items():
            value = filters.get(key, ANY)
            if combo.findText(value) < 0:
                combo.addItem(value)
            combo.setCurrentText(value)

    def _focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()


class ActionsBar(QWidget):
    """The saved views, the pinned baseline's line and the buttons that act on the selected runs; the
    page connects each button's clicked signal. `current` says what the page's view is, for saving."""

    def __init__(self, current: Callable[[], SavedView], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.open_button = QPushButton("Open in Live")
        self.open_button.setToolTip("Show the selected run's charts (Enter)")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Delete the selected runs and everything measured in them (Delete)")
        self.compare_button = QPushButton("Compare selected")
        self.compare_button.setToolTip("Compare the selected runs against their baselines (Ctrl+K)")
        self.compare_button.setShortcut("Ctrl+K")
        self.compare_experiment_button = QPushButton("Compare experiment")
        self.compare_experiment_button.setToolTip("Compare every run of the selected run's experiment")
        self.diff_button = QPushButton("Diff two runs")
        self.diff_button.setToolTip("Every field of the two selected runs side by side, differences highlighted "
                                    "(Ctrl+D)")
        self.diff_button.setShortcut("Ctrl+D")
        self.diff_button.setEnabled(False)
        self.pin_button = QPushButton("Pin as baseline")
        self.pin_button.setToolTip("Mark the selected run as this results file's baseline (◆ in the Run column): "
                                   "Compare takes speedups against it; again on the pinned run unpins it "
                                   "(Ctrl+Shift+B)")
        self.pin_button.setShortcut("Ctrl+Shift+B")
        self.pinned = QLabel("")
        self.views = ViewsBar(current)
        # The actions on a row of their own: beside the filters they made the page, hence the
        # window, wider than a 1280-pixel screen.
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.views)
        row.addWidget(self.pinned)
        row.addStretch(1)
        for button in (self.pin_button, self.diff_button, self.compare_button, self.compare_experiment_button,
                       self.open_button, self.delete_button):
            row.addWidget(button)
