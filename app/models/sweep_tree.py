"""History's tree: each experiment (a sweep's plan) a parent row, its runs beneath it.

A view over the flat RunsModel, which stays the one list of runs (the page, its tests and its
actions read rows there); this model only groups them. A parent's internal id is 0, a run's is
its experiment's position + 1, so a run's parent is found without a lookup table."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from app.models.columns import header as column_header
from app.models.runs_model import COLUMNS, SORT_ROLE, HistoryRow, RunsModel, cell
from workbench import store

EXPERIMENT_ROLE = Qt.ItemDataRole.UserRole + 2  # the experiment id of a row, parent or run
RUN_ROLE = Qt.ItemDataRole.UserRole + 3  # a run row's id; None on a parent


class SweepTree(QAbstractItemModel):
    def __init__(self, runs: RunsModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.runs = runs
        self.experiments: list[store.ExperimentRecord] = []  # oldest first
        # Each experiment's runs, oldest first (not `children`, which is QObject's method).
        self.grouped: list[list[HistoryRow]] = []
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
        self.grouped = [by_id[e.id] for e in self.experiments]
        self.endResetModel()

    def set_pinned(self, run_id: int | None) -> None:
        self.pinned = run_id
        if self.experiments:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.experiments) - 1, 0))
            for i in range(len(self.experiments)):
                parent = self.index(i, 0)
                self.dataChanged.emit(self.index(0, 0, parent), self.index(len(self.grouped[i]) - 1, 0, parent))

    def run_row(self, index: QModelIndex | QPersistentModelIndex) -> HistoryRow | None:
        """The run a row shows (None for an experiment's row)."""
        if not index.isValid() or not index.internalId():
            return None
        return self.grouped[index.internalId() - 1][index.row()]

    def experiment_index(self, experiment_id: int) -> QModelIndex:
        for i, e in enumerate(self.experiments):
            if e.id == experiment_id:
                return self.index(i, 0)
        return QModelIndex()

    def index(self, row: int, column: int,
              parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> QModelIndex:
        if not self.hasIndex(row, column, parent):
            return QModelIndex()
        return self.createIndex(row, column, parent.row() + 1 if parent.isValid() else 0)

    # QObject's parent() takes no index and answers an object; a tree model's answers the index above.
    def parent(self, index: QModelIndex | QPersistentModelIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        if not index.isValid() or not index.internalId():
            return QModelIndex()
        return self.createIndex(index.internalId() - 1, 0, 0)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt's name
        if not parent.isValid():
            return len(self.experiments)
        if parent.internalId() or parent.column() != 0:
            return 0
        return len(self.grouped[parent.row()])

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt's name
        return len(COLUMNS)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
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
        if pinned and role == Qt.ItemDataRole.DisplayRole:
            return f"{row.run.id} ◆"
        if pinned and role == Qt.ItemDataRole.ToolTipRole:
            return "The pinned baseline (History > Pin as baseline)"
        return cell(row, key, role)

    def _experiment_data(self, i: int, key: str, role: int) -> Any:
        experiment, runs = self.experiments[i], self.grouped[i]
        if role == EXPERIMENT_ROLE:
            return experiment.id
        if role == Qt.ItemDataRole.DisplayRole:
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
        if role == Qt.ItemDataRole.ToolTipRole and key == "id":
            return f"Experiment {experiment.id} ({len(runs)} runs): every run of one plan"
        if role == SORT_ROLE:
            # Experiments sort among themselves by id whatever the column: a sweep's order is its age.
            return experiment.id
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt's name
                   role: int = Qt.ItemDataRole.DisplayRole) -> str | None:
        return column_header(COLUMNS, section, orientation, role)
