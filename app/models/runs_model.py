"""The runs of a results database as a Qt table model."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from app.models.columns import header as column_header
from workbench import store
from workbench.analysis import compare, lossless
from workbench.usecases import host_facts

COLUMNS = [
    ("id", "Run", "Run id in the database"),
    ("status", "Status", "pending, running, completed, partial (some requests failed: left out of speedups), failed or cancelled"),
    ("tags", "Tags", "Your tags on the run: select it and type them under the table (searchable, Ctrl+F)"),
    ("target", "Target", "The served model"),
    ("method", "Method", "Drafting method; baseline = no speculation; '(what-if)': dummy weights and an imposed "
                         "acceptance, kept out of measured tables (hover for the curve's source)"),
    ("n", "N", "Number of speculative tokens per step"),
    ("workload", "Workload", "Prompt set"),
    ("concurrency", "Conc.", "Requests in flight at once"),
    ("mal", "MAL", "Mean acceptance length = 1 + accepted / drafts (vLLM's definition)"),
    ("acceptance_rate", "Accept.", "Acceptance rate = accepted draft tokens / drafted tokens"),
    ("output_tok_s", "Output tok/s", "Output tokens / wall time of the measurement window"),
    ("lossless_identical", "Answers", "At temperature 0 a speculative run must answer as its baseline does: answers "
                                      "identical to the baseline's / answers compared, and the task accuracy where the "
                                      "workload grades answers (GSM8K, MATH500, the built-in math prompts). '!' marks a "
                                      "run whose speculation is not lossless (hover for why)"),
    ("gpus", "GPUs", "The GPU(s) the run's server was pinned to (physical indices, as nvidia-smi / amd-smi "
                     "number them; on vLLM's CPU build, the logical slot); empty: as the launch profile selects them"),
    ("started", "Started", "When the run's measurement began (local time)"),
    ("provenance", "Provenance", "Image or vLLM, GPU, compute/memory partition and the attention backend vLLM "
                                 "chose; the tooltip has every recorded field"),
    ("error", "Error", "Why a run failed"),
]
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
FORMATS = {"mal": "{:.2f}", "acceptance_rate": "{:.3f}", "output_tok_s": "{:.1f}"}


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryRow:
    """One run as History lists it: the stored run, and the reader's tags and notes on it."""
    run: store.RunRecord
    tags: str = ""
    notes: str = ""

    def value(self, key: str) -> Any:
        """What the column (or filter, or search field) `key` reads: the tags or notes, else the
        run's field of that name, its status as text (what is shown, filtered and sorted)."""
        if key == "tags":
            return self.tags
        if key == "notes":
            return self.notes
        if key == "status":
            return str(self.run.status)
        return getattr(self.run, key)


def history_row(run: store.RunRecord, note: store.Annotation | None) -> HistoryRow:
    """A run with the reader's tags and notes on it (None: it has none)."""
    return HistoryRow(run=run) if note is None else HistoryRow(run=run, tags=note.tags, notes=note.notes)


def cell(row: HistoryRow, key: str, role: int) -> Any:
    """What a run's cell shows in a role: the flat table and History's tree show runs alike."""
    run = row.run
    value = row.value(key)
    redone_by = run.redone_by  # a failed attempt kept beside the run that redid it
    if redone_by is not None and key == "status" and role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
        return (f"{value} (redone: run {redone_by})" if role == Qt.ItemDataRole.DisplayRole
                else f"This attempt {value} and was redone as run {redone_by}; its error and log tail are kept")
    if redone_by is not None and key == "id" and role == SORT_ROLE:
        return redone_by + 0.5  # right after its redo when sorted by run
    if role == Qt.ItemDataRole.DisplayRole:
        if key == "lossless_identical" and run.graded:
            value = value if value is not None else 0  # accuracy alone (a baseline)
        if value is None:
            return ""
        if key == "target":
            return str(value).rstrip("/").rsplit("/", 1)[-1]
        if key == "started":
            return time.strftime("%Y-%m-%d %H:%M", time.localtime(value))
        if key == "provenance":
            return host_facts.provenance_summary(json.loads(value))
        if key == "gpus":
            return ",".join(map(str, json.loads(value)))
        if key == "method" and run.what_if:
            return f"{value} (what-if)"
        if key == "lossless_identical":
            return ("! " if lossless.verdict(run) else "") + lossless.summary(run)
        return FORMATS.get(key, "{}").format(value)
    if role == Qt.ItemDataRole.ToolTipRole and key in ("target", "error") and value:
        return str(value)
    if role == Qt.ItemDataRole.ToolTipRole and key == "lossless_identical":
        return lossless.verdict(run)
    if role == Qt.ItemDataRole.ToolTipRole and key == "method" and run.what_if:
        return compare.marker(run)
    if role == Qt.ItemDataRole.ToolTipRole and key == "provenance" and value:
        return "\n".join(f"{label}: {text}" for label, text in host_facts.provenance_rows(json.loads(value)))
    if role == SORT_ROLE:
        return value if value is not None else ("" if key in ("provenance", "tags") else -1)
    if role == Qt.ItemDataRole.TextAlignmentRole and key not in (
            "status", "tags", "target", "method", "workload", "error", "started", "provenance", "lossless_identical"):
        return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return None


RowT = TypeVar("RowT")


class RowsModel(QAbstractTableModel, Generic[RowT]):
    """A table of rows with a fixed list of columns; subclasses say what a row is and how a cell
    is shown."""

    columns: Sequence[tuple[str, str, Any]] = []

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[RowT] = []

    def set_rows(self, rows: list[RowT]) -> None:
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt's name
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt's name
        return 0 if parent.isValid() else len(self.columns)

    def row(self, i: int) -> RowT:
        return self._rows[i]


class RunsModel(RowsModel[HistoryRow]):
    """History's runs, flat: a HistoryRow a row."""
    columns = COLUMNS

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        return cell(self._rows[index.row()], COLUMNS[index.column()][0], role)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt's name
                   role: int = Qt.ItemDataRole.DisplayRole) -> str | None:
        return column_header(COLUMNS, section, orientation, role)
