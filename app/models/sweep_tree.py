"""History's tree: each experiment (a sweep's plan) a parent row, its runs beneath it.

A view over the flat RunsModel, which stays the one list of runs (the page, its tests and its
actions read rows there); this model only groups them. A parent's internal id is 0, a run's is
its experiment's position + 1, so a run's parent is found without a lookup table."""

from __future__ import annotations

import time

from PySide6.QtCore import QAbstractItemModel, QModelIndex, Qt

from app.models.columns import header as column_header
from app.models.runs_model import COLUMNS, SORT_ROLE, HistoryRow, RunsModel, cell
from workbench import store

EXPERIMENT_ROLE = Qt.UserRole + 2  # the experiment id of a row, parent or run
RUN_ROLE = Qt.UserRole + 3  # a run row's id; None on a parent


class SweepTree(QAbstractItemModel):
    def __init__(self, runs: RunsModel, parent=None):
        super().__init__(parent)
        self.runs = runs
        self.experiments: list[store.ExperimentRecord] = []  # oldest first
        self.children: list[list[HistoryRow]] = []  # each experiment's runs, oldest first
        self.pinned: int | None = None  # the run pinned as the baseline: marked in its Run cell

    def set_experiments(self, experiments: list[store.ExperimentRecord]) -> None:
        """Groups the RunsModel's rows under these experiments (one the runs name but the list lacks,
        e.g. a file read before it had a name, gets a bare parent row)."""
        self.beginResetModel()
        by_id: dict[int, list[HistoryRow]] = {}
        for row in self.runs._rows:
            by_id.setdefault(row.run.experiment_id, []).append(row)
        known = {e.id: e for e in experiments}
        self.experiments = [known.get(i) or store.ExperimentRecord(i) for i in sorted(by_id)]
        self.children = [by_id[e.id] for e in self.experiments]
        self.endResetModel()

    def set_pinned(self, run_id: int | None) -> None:
        self.pinned = run_id
        if self.experiments:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.experiments) - 1, 0))
            for i in range(len(self.experiments)):
                parent = self.index(i, 0)
                self.dataChanged.emit(self.index(0, 0, parent), self.index(len(self.children[i]) - 1, 0, parent))

    def run_row(self, index: QModelIndex) -> HistoryRow | None:
        """The run a row shows (None for an experiment's row)."""
        if not index.isValid() or not index.internalId():
            return None
        return self.children[index.internalId() - 1][index.row()]

    def experiment_index(self, experiment_id: int) -> QModelIndex:
        for i, e in enumerate(self.experiments):
            if e.id == experiment_id:
                return self.index(i, 0)
        return QModelIndex()

    def index(self, row, column, parent=QModelIndex()):
        if not self.hasIndex(row, column, parent):
            return QModelIndex()
        return self.createIndex(row, column, parent.row() + 1 if parent.isValid() else 0)

    def parent(self, index=QModelIndex()):  # type: ignore[override]
        if not index.isValid() or not index.internalId():
            return QModelIndex()
        return self.createIndex(index.internalId() - 1, 0, 0)

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt's name
        if not parent.isValid():
            return len(self.experiments)
        if parent.internalId() or parent.column() != 0:
            return 0
        return len(self.children[parent.row()])

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt's name
        return len(COLUMNS)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        key = COLUMNS[index.column()][0]
        row = self.run_row(index)
        if row is None:
            return self._experiment_data(index.row(), key, role)
        if role == EXPERIMENT_ROLE:
            return row.run.experiment_id
        if role == RUN_ROLE:
            return row.run.id
        pinned = self.pinned is not None and row.run.id == self.pinned and key == "id"
        if pinned and role == Qt.DisplayRole:
            return f"{row.run.id} ◆"
        if pinned and role == Qt.ToolTipRole:
            return "The pinned baseline (History > Pin as baseline)"
        return cell(row, key, role)

    def _experiment_data(self, i: int, key: str, role):
        experiment, runs = self.experiments[i], self.children[i]
        if role == EXPERIMENT_ROLE:
            return experiment.id
        if role == Qt.DisplayRole:
            if key == "id":
                return f"#{experiment.id} {experiment.name or 'experiment'}"
            if key == "status":
                counts: dict[str, int] = {}
                for r in runs:
                    counts[str(r.run.status)] = counts.get(str(r.run.status), 0) + 1
                return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
            if key == "target":
                targets = {(r.run.target or "").rstrip("/").rsplit("/", 1)[-1] for r in runs}
                return targets.pop() if len(targets) == 1 else f"{len(targets)} targets"
            if key == "started" and experiment.created:
                return time.strftime("%Y-%m-%d %H:%M", time.localtime(experiment.created))
            return ""
        if role == Qt.ToolTipRole and key == "id":
            return f"Experiment {experiment.id} ({len(runs)} runs): every run of one plan"
        if role == SORT_ROLE:
            # Experiments sort among themselves by id whatever the column: a sweep's order is its age.
            return experiment.id
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: N802 - Qt's name
        return column_header(COLUMNS, section, orientation, role)
