"""What History shows of its tree: the filter combos' values and the search box's words."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QSortFilterProxyModel

from app.models.runs_model import HistoryRow
from app.models.sweep_tree import SweepTree

# The fields a search looks in (tags and notes are the reader's own, joined in when read).
SEARCHED = ("method", "target", "workload", "status", "tags", "notes", "draft")


def haystack(row: HistoryRow) -> str:
    return " ".join(str(row.value(key) or "") for key in SEARCHED).lower()


class RunsFilter(QSortFilterProxyModel):
    """Runs whose fields equal every combo's value and contain every word of the search, each under
    its experiment: recursive filtering keeps a parent row while any of its runs is shown."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.wanted: dict[str, str] = {}
        self.words: list[str] = []
        self.setRecursiveFilteringEnabled(True)

    def set_filter(self, key: str, value: str | None) -> None:
        self.beginFilterChange()
        if value is None:
            self.wanted.pop(key, None)
        else:
            self.wanted[key] = value
        self.endFilterChange()

    def set_search(self, text: str) -> None:
        # Every word must appear somewhere (AND), as in a W&B or MLflow runs search box.
        self.beginFilterChange()
        self.words = text.lower().split()
        self.endFilterChange()

    def filterAcceptsRow(self, source_row: int,  # noqa: N802 - Qt's name
                         source_parent: QModelIndex | QPersistentModelIndex) -> bool:
        model = self.sourceModel()
        assert isinstance(model, SweepTree)  # the History page's tree is the one source it filters
        row = model.run_row(model.index(source_row, 0, source_parent))
        if row is None:
            # An experiment is shown for its runs only while something filters (recursion shows
            # it when one of them passes), and always otherwise.
            return not self.wanted and not self.words
        if not all(str(row.value(k)) == v for k, v in self.wanted.items()):
            return False
        text = haystack(row)
        return all(word in text for word in self.words)
