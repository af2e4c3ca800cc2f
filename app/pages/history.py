"""The History page: every run in the open database, sortable and filterable, deletable, openable in Live."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox, QHBoxLayout, QHeaderView, QLabel, QMessageBox, QPushButton, QTableView, QVBoxLayout, QWidget,
)

from app.jobs import worker
from app.models.runs_model import SORT_ROLE, RunsModel
from workbench import store

FILTERS = ("method", "workload", "status", "target")
ANY = "(any)"


class RunsFilter(QSortFilterProxyModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.wanted: dict[str, str] = {}

    def set_filter(self, key: str, value: str | None) -> None:
        self.beginFilterChange()
        if value is None:
            self.wanted.pop(key, None)
        else:
            self.wanted[key] = value
        self.endFilterChange()

    def filterAcceptsRow(self, source_row, source_parent) -> bool:
        row = self.sourceModel().row(source_row)
        return all(str(row.get(k)) == v for k, v in self.wanted.items())


class HistoryPage(QWidget):
    open_in_live = Signal(int)
    compare = Signal(list)  # run rows

    def __init__(self, parent=None):
        super().__init__(parent)
        self.db_path: Path | None = None
        self._loaded_from: Path | None = None
        self.reading = False  # a read of the runs in flight
        self._again = False
        self.model = RunsModel(self)
        self.proxy = RunsFilter(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.view = QTableView()
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(0, Qt.AscendingOrder)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        # Column widths from the first rows only: measuring every row of a large history took
        # seconds per refresh (the page refreshes on every run event of a sweep).
        self.view.horizontalHeader().setResizeContentsPrecision(64)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.setSelectionBehavior(QTableView.SelectRows)
        self.view.setSelectionMode(QTableView.ExtendedSelection)
        self.view.doubleClicked.connect(lambda _: self._open())

        self.combos: dict[str, QComboBox] = {}
        bar = QHBoxLayout()
        for key in FILTERS:
            combo = QComboBox()
            combo.setMinimumContentsLength(12)
            combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
            combo.setToolTip(f"Show only runs with this {key}")
            combo.currentTextChanged.connect(lambda text, k=key: self.proxy.set_filter(k, None if text == ANY else text))
            self.combos[key] = combo
            bar.addWidget(QLabel(key.capitalize()))
            bar.addWidget(combo)
        bar.addStretch(1)
        self.open_button = QPushButton("Open in Live")
        self.open_button.setToolTip("Show the selected run's charts (Enter)")
        self.open_button.clicked.connect(self._open)
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Delete the selected runs and everything measured in them (Delete)")
        self.delete_button.clicked.connect(self.delete_selected)
        self.compare_button = QPushButton("Compare selected")
        self.compare_button.setToolTip("Compare the selected runs against their baselines (Ctrl+K)")
        self.compare_button.setShortcut("Ctrl+K")
        self.compare_button.clicked.connect(self._compare_selected)
        self.compare_experiment_button = QPushButton("Compare experiment")
        self.compare_experiment_button.setToolTip("Compare every run of the selected run's experiment")
        self.compare_experiment_button.clicked.connect(self._compare_experiment)
        # The actions on a row of their own: beside the filters they made the page, hence the
        # window, wider than a 1280-pixel screen.
        actions = QHBoxLayout()
        actions.addStretch(1)
        actions.addWidget(self.compare_button)
        actions.addWidget(self.compare_experiment_button)
        actions.addWidget(self.open_button)
        actions.addWidget(self.delete_button)
        QShortcut(QKeySequence.Delete, self.view, self.delete_selected)
        QShortcut(QKeySequence(Qt.Key_Return), self.view, self._open)
        self.empty = QLabel("")
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addLayout(actions)
        layout.addWidget(self.view)
        layout.addWidget(self.empty)

    def load(self, db_path: Path) -> None:
        """Reads the database's runs off the GUI thread (a large history is a long read, and a sweep
        writing to the file may hold it a moment); the table changes when the answer comes. One
        read at a time: a load asked for meanwhile reads again once it returns."""
        self.db_path = db_path
        if self.reading:
            self._again = True
            return
        self.reading = True
        worker.run(lambda: _read_runs(db_path), self, lambda found: self._loaded(db_path, *found))

    def _loaded(self, db_path: Path, rows: list[dict], message: str) -> None:
        self.reading = False
        if self._again or db_path != self.db_path:
            self._again = False
            self.load(self.db_path)
            return
        if rows and rows == self.model._rows and db_path == self._loaded_from:
            return  # nothing changed since the last refresh: keep the view, its selection and scroll
        self._loaded_from = db_path
        self.model.set_rows(rows)
        for key, combo in self.combos.items():
            current = combo.currentText() or ANY
            values = sorted({str(r.get(key)) for r in rows})
            combo.blockSignals(True)
            combo.clear()
            combo.addItems([ANY] + values)
            combo.setCurrentText(current if current in values else ANY)
            combo.blockSignals(False)
            self.proxy.set_filter(key, None if combo.currentText() == ANY else combo.currentText())
        self.empty.setText(message or ("" if rows else "No runs in this database yet."))

    def selected_ids(self) -> list[int]:
        rows = {self.proxy.mapToSource(i).row() for i in self.view.selectionModel().selectedRows()}
        return [self.model.row(r)["id"] for r in sorted(rows)]

    def _compare_selected(self) -> None:
        ids = set(self.selected_ids())
        rows = [r for r in self.model._rows if r["id"] in ids]
        experiments = {r["experiment_id"] for r in rows}
        # Baselines of the same experiments come along, so speedups can be computed.
        rows += [r for r in self.model._rows if r["method"] == "baseline" and r["experiment_id"] in experiments
                 and r["id"] not in ids]
        if rows:
            self.compare.emit(rows)

    def _compare_experiment(self) -> None:
        ids = self.selected_ids()
        rows = self.model._rows
        if not ids and rows:
            ids = [rows[-1]["id"]]
        experiments = {r["experiment_id"] for r in rows if r["id"] in set(ids)}
        chosen = [r for r in rows if r["experiment_id"] in experiments]
        if chosen:
            self.compare.emit(chosen)

    def _open(self) -> None:
        ids = self.selected_ids()
        if ids:
            self.open_in_live.emit(ids[0])

    def delete_selected(self, confirm: bool = True) -> None:
        ids = self.selected_ids()
        if not ids or self.db_path is None or not self.delete_button.isEnabled():
            return
        if confirm and QMessageBox.question(
                self, "Delete runs", f"Delete {len(ids)} run(s) and everything measured in them?") != QMessageBox.Yes:
            return
        db_path = self.db_path
        self.delete_button.setEnabled(False)  # one delete at a time
        worker.run(lambda: _delete_runs(db_path, ids), self, lambda _: self._deleted(db_path), self._delete_failed)

    def _deleted(self, db_path: Path) -> None:
        self.delete_button.setEnabled(True)
        self.load(db_path)

    def _delete_failed(self, exc: BaseException) -> None:
        self.delete_button.setEnabled(True)
        QMessageBox.warning(self, "Delete runs", str(exc))
        if self.db_path is not None:
            self.load(self.db_path)


def _delete_runs(db_path: Path, ids: list[int]) -> None:
    # Off the GUI thread: a sweep writing to the file may hold its lock for a moment.
    db = store.open_db(db_path)
    try:
        for run_id in ids:
            store.delete_run(db, run_id)
    finally:
        store.close(db)


def _read_runs(db_path: Path) -> tuple[list[dict], str]:
    """The database's runs, and why there are none when it cannot be read (on a worker's thread)."""
    if not db_path.exists():
        return [], ""
    try:
        db = store.open_db(db_path, readonly=True)
        try:
            return store.runs(db), ""
        finally:
            store.close(db)
    except store.StoreError as exc:
        return [], str(exc)
