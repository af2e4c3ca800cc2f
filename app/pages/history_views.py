"""History's saved views (a named search, filters and sort) and the pinned baseline, kept in the
app's settings file: they are the reader's preferences, not results, so the results file stays as
the sweeps wrote it (the tags and notes, which are about runs, are kept there)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QInputDialog, QLabel, QPushButton, QWidget

from workbench import paths

VIEWS_KEY = "history/views"
BASELINES_KEY = "history/pinned_baselines"
CHOOSE = "(choose a view)"


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedView:
    """What a saved view brings back: the search box's text, each filter's value by field, and the
    column sorted by and its order (Qt.SortOrder's value)."""
    search: str = ""
    filters: dict[str, str] = field(default_factory=dict)
    sort_column: int = 0
    sort_order: int = 0


def _whole(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def saved_view(doc: object) -> SavedView | None:
    """A view as the settings file keeps it (JSON, perhaps edited by hand): a field of the wrong type
    is left at its default, and what is not a JSON object is no view."""
    if not isinstance(doc, dict):
        return None
    filters, search = doc.get("filters"), doc.get("search")
    return SavedView(search=search if isinstance(search, str) else "",
                     filters={str(k): str(v) for k, v in filters.items()} if isinstance(filters, dict) else {},
                     sort_column=_whole(doc.get("sort_column")), sort_order=_whole(doc.get("sort_order")))


def settings() -> QSettings:
    # The file the main window keeps its settings in (app.main cannot be imported here: it imports this page).
    return QSettings(str(paths.config_dir() / "draftbench.ini"), QSettings.Format.IniFormat)


def _read(key: str) -> dict[str, Any]:
    try:
        value = json.loads(str(settings().value(key, "{}")))
    except ValueError:
        return {}  # a settings file edited by hand: start afresh rather than fail
    return value if isinstance(value, dict) else {}


def _write(key: str, value: dict[str, Any]) -> None:
    s = settings()
    s.setValue(key, json.dumps(value, sort_keys=True))
    s.sync()


def views() -> dict[str, SavedView]:
    """The saved views by name (one the settings file holds damaged is left out)."""
    found = {name: saved_view(doc) for name, doc in _read(VIEWS_KEY).items()}
    return {name: view for name, view in found.items() if view is not None}


def save_view(name: str, view: SavedView) -> None:
    _write(VIEWS_KEY, {**_read(VIEWS_KEY), name: asdict(view)})


def delete_view(name: str) -> None:
    _write(VIEWS_KEY, {k: v for k, v in _read(VIEWS_KEY).items() if k != name})


def pinned_baseline(db_path: Path) -> int | None:
    """The run pinned as the baseline in this results file (run ids are the file's own)."""
    value = _read(BASELINES_KEY).get(str(db_path.resolve()))
    return value if isinstance(value, int) else None


def pin_baseline(db_path: Path, run_id: int | None) -> None:
    pins = {k: v for k, v in _read(BASELINES_KEY).items() if k != str(db_path.resolve())}
    _write(BASELINES_KEY, pins if run_id is None else {**pins, str(db_path.resolve()): run_id})


class ViewsBar(QWidget):
    """A combo of the saved views and the buttons to save the current one or delete the chosen one.
    `chosen(view)` when one is picked; the page says what the current view is through `current`."""

    chosen = Signal(object)  # the SavedView picked

    def __init__(self, current: Callable[[], SavedView], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.current = current  # () -> the page's SavedView
        self.combo = QComboBox()
        self.combo.setMinimumContentsLength(14)
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setToolTip("Show a saved view: its search, filters and sort")
        self.combo.activated.connect(self._picked)
        self.save_button = QPushButton("Save view…")
        # No shortcut: Ctrl+Shift+S is the window's Save plan as.
        self.save_button.setToolTip("Name the current search, filters and sort, to show them again in one click")
        self.save_button.clicked.connect(self._ask_and_save)
        self.delete_button = QPushButton("Delete view")
        self.delete_button.setToolTip("Forget the view chosen in the list")
        self.delete_button.clicked.connect(self._delete)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("View"))
        layout.addWidget(self.combo)
        layout.addWidget(self.save_button)
        layout.addWidget(self.delete_button)
        self.refresh()

    def refresh(self, select: str | None = None) -> None:
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItems([CHOOSE] + sorted(views()))
        self.combo.setCurrentText(select if select else CHOOSE)
        self.combo.blockSignals(False)
        self.delete_button.setEnabled(self.combo.currentText() != CHOOSE)

    def save(self, name: str) -> None:
        name = name.strip()
        if name and name != CHOOSE:
            save_view(name, self.current())
            self.refresh(name)

    def _ask_and_save(self) -> None:
        name, ok = QInputDialog.getText(self, "Save view", "Name of the view:")
        if ok:
            self.save(name)

    def _picked(self, _index: int) -> None:
        name = self.combo.currentText()
        self.delete_button.setEnabled(name != CHOOSE)
        if name in views():
            self.chosen.emit(views()[name])

    def _delete(self) -> None:
        if self.combo.currentText() != CHOOSE:
            delete_view(self.combo.currentText())
            self.refresh()
