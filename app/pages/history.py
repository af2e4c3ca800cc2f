"""The History page: every run in the open database under its experiment, sortable, searchable and
filterable, deletable, openable in Live."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QMessageBox, QVBoxLayout, QWidget

from app.jobs import worker
from app.models.runs_model import SORT_ROLE, HistoryRow, RunsModel, history_row
from app.models.sweep_tree import EXPERIMENT_ROLE, RUN_ROLE, SweepTree
from app.pages import history_views
from app.pages.history_filter import RunsFilter
from app.pages.history_bars import ActionsBar, FilterBar, runs_view
from app.pages.history_views import SavedView
from app.widgets.run_diff import RunDiff
from app.widgets.run_notes import RunNotes
from workbench import store


class HistoryPage(QWidget):
    open_in_live = Signal(int)
    compare = Signal(list)  # the RunRecords to compare
    pinned_changed = Signal(object)  # the run pinned as the baseline, None when unpinned

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db_path: Path | None = None
        self._loaded_from: Path | None = None
        self._latest: int | None = None  # the newest experiment seen: opened once when it appears
        self.reading = False  # a read of the runs in flight
        self._again = False
        self.model = RunsModel(self)  # the runs, flat: what the actions read
        self.tree = SweepTree(self.model, self)  # the same runs under their experiments: what is shown
        self.proxy = RunsFilter(self)
        self.proxy.setSourceModel(self.tree)
        self.proxy.setSortRole(SORT_ROLE)
        self._expanded: set[int] = set()  # experiments the reader left open, kept across refreshes
        self.view = runs_view(self.proxy)
        self.view.doubleClicked.connect(lambda _: self._open())
        self.view.expanded.connect(lambda i: self._expanded.add(i.data(EXPERIMENT_ROLE)))
        self.view.collapsed.connect(lambda i: self._expanded.discard(i.data(EXPERIMENT_ROLE)))
        self.filters = FilterBar()
        self.filters.filter_changed.connect(self.proxy.set_filter)
        self.combos, self.search = self.filters.combos, self.filters.search
        self.search.textChanged.connect(self._searched)
        self.toolbar = ActionsBar(self.current_view)
        # The toolbar's parts that the page's methods (and its tests) read under these names.
        self.open_button, self.delete_button = self.toolbar.open_button, self.toolbar.delete_button
        self.diff_button, self.pin_button = self.toolbar.diff_button, self.toolbar.pin_button
        self.pinned, self.views = self.toolbar.pinned, self.toolbar.views
        self.diff: RunDiff | None = None
        bar = self.toolbar
        for button, action in ((bar.open_button, self._open), (bar.delete_button, self.delete_selected),
                               (bar.compare_button, self._compare_selected), (bar.diff_button, self.diff_selected),
                               (bar.compare_experiment_button, self._compare_experiment),
                               (bar.pin_button, self.pin_selected)):
            button.clicked.connect(action)
        self.views.chosen.connect(self.apply_view)
        QShortcut(QKeySequence.StandardKey.Delete, self.view, self.delete_selected)
        QShortcut(QKeySequence(Qt.Key.Key_Return), self.view, self._open)
        self.empty = QLabel("")
        self.notes = RunNotes()
        self.notes.save.connect(self.save_notes)
        self.view.selectionModel().selectionChanged.connect(self._selection_changed)
        layout = QVBoxLayout(self)
        for part in (self.filters, self.toolbar):
            layout.addWidget(part)
        layout.addWidget(self.view, 1)  # the runs get the height; the notes keep their few lines
        layout.addWidget(self.empty)
        layout.addWidget(self.notes)

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

    def _loaded(self, db_path: Path, rows: list[HistoryRow], experiments: list[store.ExperimentRecord],
                message: str) -> None:
        self.reading = False
        if self._again or db_path != self.db_path:
            self._again = False
            self.load(self.db_path or db_path)  # the file asked for last
            return
        if rows and rows == self.model._rows and db_path == self._loaded_from:
            return  # nothing changed since the last refresh: keep the view, its selection and scroll
        self._loaded_from = db_path
        self._expanded &= {r.run.experiment_id for r in rows}
        latest = max((r.run.experiment_id for r in rows), default=None)
        if latest is not None and latest != self._latest:
            self._latest = latest
            self._expanded.add(latest)  # a new sweep opens, as its runs are the ones wanted first
        kept = self.selected_ids()  # a refresh resets the model: the selection is put back after
        self.model.set_rows(rows)
        self.tree.set_experiments(experiments)
        self.filters.offer(rows)
        self._show_pin(history_views.pinned_baseline(db_path))
        self._expand()
        # Measured again once the rows to show are unfolded: a tree sizes its columns on the rows
        # visible when it is reset, which were only the experiments'.
        for column in range(self.tree.columnCount()):
            self.view.resizeColumnToContents(column)
        self.select_runs(kept)
        self._selection_changed()
        self.empty.setText(message or ("" if rows else "No runs in this database yet."))

    def _rows_of(self, ids: Collection[int | None]) -> list[HistoryRow]:
        """The rows of these runs, in the table's order."""
        return [r for r in self.model._rows if r.run.id in ids]

    def _selection_changed(self, *_: object) -> None:
        rows = self._rows_of(set(self.selected_ids()))
        self.notes.show_run(rows[0] if len(rows) == 1 else None)
        self.diff_button.setEnabled(len(rows) == 2)
        self.pin_button.setEnabled(len(rows) == 1)
        self.pin_button.setText("Unpin baseline" if len(rows) == 1 and rows[0].run.id == self.tree.pinned
                                else "Pin as baseline")

    def current_view(self) -> SavedView:
        header = self.view.header()
        return SavedView(search=self.search.text(), sort_column=header.sortIndicatorSection(),
                         sort_order=int(header.sortIndicatorOrder().value), filters=self.filters.chosen())

    def apply_view(self, view: SavedView) -> None:
        """Shows a saved view: its filters (see FilterBar.choose), its search and its sort."""
        self.filters.choose(view.filters)
        self.search.setText(view.search)
        self.view.sortByColumn(view.sort_column, Qt.SortOrder(view.sort_order))

    def pin_selected(self) -> None:
        ids = self.selected_ids()
        if len(ids) != 1 or self.db_path is None:
            return
        run_id = None if ids[0] == self.tree.pinned else ids[0]
        history_views.pin_baseline(self.db_path, run_id)
        self._show_pin(run_id)
        self._selection_changed()
        self.pinned_changed.emit(run_id)

    def _show_pin(self, run_id: int | None) -> None:
        rows = self._rows_of({run_id})
        self.tree.set_pinned(run_id if rows else None)
        self.pinned.setText(f"Baseline: ◆ run {run_id} ({rows[0].run.method}, {rows[0].run.workload})" if rows else "")
        self.pinned.setToolTip("The run pinned as this results file's baseline: Compare and its report take every "
                               "speedup at its concurrency against it; unpin it to go back to each experiment's own"
                               if rows else "")

    def diff_selected(self) -> RunDiff | None:
        """The two selected runs' fields side by side, in a window of its own (non-modal, so the
        table stays usable beside it)."""
        rows = self._rows_of(set(self.selected_ids()))
        if len(rows) != 2:
            return None
        self.diff = RunDiff(rows[0], rows[1], self)
        self.diff.show()
        return self.diff

    def save_notes(self, run_id: int, tags: str, notes: str) -> None:
        """Writes a run's tags and notes on a worker's thread (a sweep writing to the file may hold its
        lock a moment), then reads the runs again to show them."""
        if self.db_path is None:
            return
        db_path = self.db_path
        self.notes.save_button.setEnabled(False)  # one write at a time
        worker.run(lambda: _annotate(db_path, run_id, tags, notes), self, lambda _: self._saved(db_path),
                   self._save_failed)

    def _saved(self, db_path: Path) -> None:
        self.notes.save_button.setEnabled(self.notes.run_id is not None)
        self.load(db_path)

    def _save_failed(self, exc: BaseException) -> None:
        self.notes.save_button.setEnabled(self.notes.run_id is not None)
        QMessageBox.warning(self, "Save notes", str(exc))

    def _searched(self, text: str) -> None:
        self.proxy.set_search(text)
        self._expand()

    def _expand(self) -> None:
        """Opens the experiments the reader had open, the newest one at first; while a search or a
        filter narrows the runs, every experiment with a run shown, so no match hides folded."""
        narrowed = bool(self.proxy.words or self.proxy.wanted)
        for i in range(self.proxy.rowCount()):
            index = self.proxy.index(i, 0)
            self.view.setExpanded(index, narrowed or index.data(EXPERIMENT_ROLE) in self._expanded)

    def visible_run_ids(self) -> list[int]:
        """The runs shown, top to bottom (folded experiments' runs included)."""
        ids = []
        for i in range(self.proxy.rowCount()):
            parent = self.proxy.index(i, 0)
            ids += [self.proxy.index(j, 0, parent).data(RUN_ROLE) for j in range(self.proxy.rowCount(parent))]
        return ids

    def select_runs(self, run_ids: list[int]) -> None:
        """Selects these runs' rows (as clicking them with Ctrl would)."""
        selection = self.view.selectionModel()
        selection.clearSelection()
        flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
        for i in range(self.proxy.rowCount()):
            parent = self.proxy.index(i, 0)
            for j in range(self.proxy.rowCount(parent)):
                index = self.proxy.index(j, 0, parent)
                if index.data(RUN_ROLE) in run_ids:
                    selection.setCurrentIndex(index, flags)

    def selected_ids(self) -> list[int]:
        """The selected runs; a selected experiment row stands for all its runs shown."""
        ids: list[int] = []
        for index in self.view.selectionModel().selectedRows():
            run_id = index.data(RUN_ROLE)
            if run_id is not None:
                ids.append(run_id)
                continue
            ids += [self.proxy.index(j, 0, index).data(RUN_ROLE) for j in range(self.proxy.rowCount(index))]
        return sorted(set(ids))

    def _compare_selected(self) -> None:
        ids = set(self.selected_ids())
        runs = [r.run for r in self._rows_of(ids)]
        experiments = {run.experiment_id for run in runs}
        # Baselines of the same experiments come along, so speedups can be computed.
        runs += [r.run for r in self.model._rows if r.run.method == "baseline"
                 and r.run.experiment_id in experiments and r.run.id not in ids]
        if runs:
            self.compare.emit(runs)

    def _compare_experiment(self) -> None:
        ids = set(self.selected_ids())
        runs = [r.run for r in self.model._rows]
        if not ids and runs:
            ids = {runs[-1].id}
        experiments = {run.experiment_id for run in runs if run.id in ids}
        # The experiment as its sweep left it: a failed attempt that was redone is not one of its runs.
        chosen = [run for run in runs if run.experiment_id in experiments and run.redone_by is None]
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
        question = f"Delete {len(ids)} run(s) and everything measured in them?"
        if confirm and QMessageBox.question(self, "Delete runs", question) != QMessageBox.StandardButton.Yes:
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


def _annotate(db_path: Path, run_id: int, tags: str, notes: str) -> None:
    db = store.open_db(db_path)
    try:
        store.set_annotation(db, run_id, tags, notes)
    finally:
        store.close(db)


def _read_runs(db_path: Path) -> tuple[list[HistoryRow], list[store.ExperimentRecord], str]:
    """The database's runs (each with its tags and notes), its experiments, and why there are none
    when it cannot be read (on a worker's thread)."""
    if not db_path.exists():
        return [], [], ""
    try:
        db = store.open_db(db_path, readonly=True)
        try:
            notes = {note.run_id: note for note in store.annotated_runs(db)}
            rows = [history_row(run, notes.get(run.id)) for run in store.runs(db)]
            return rows, store.experiments(db), ""
        finally:
            store.close(db)
    except store.StoreError as exc:
        return [], [], str(exc)
