"""The Models page's way on when the Hub cannot be reached (offline mode or no connection): Config
only and Download have nothing to fetch from, so the page says in one line what serves instead, a
model folder on this machine or a shipped model shape (resources/shapes), and offers both."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QTableView, QWidget

from app.widgets.findings import RED
from app.widgets.tables import TableModel

LINE = ("Without the Hub: open a local model folder (one with its config.json), or use a shipped shape "
        "(configs only), and plan a what-if sweep on it.")


class OfflineRoute(QWidget):
    folder_chosen = Signal(object)  # a local folder holding a config.json
    shape_wanted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel(LINE, textFormat=Qt.TextFormat.PlainText)  # a folder's name is shown as it is
        self.label.setToolTip("The Hugging Face Hub is not asked in offline mode (HF_HUB_OFFLINE=1) and cannot "
                              "be without a connection: what is on this machine still serves")
        self.folder_button = QPushButton("Open &local model folder…")
        self.folder_button.setToolTip("Choose a folder with a model's config.json (its weights are not needed) "
                                      "and plan a what-if sweep on it")
        self.shape_button = QPushButton("Use a shipped &shape")
        self.shape_button.setToolTip("Select a shipped model shape below (resources/shapes, configs only): "
                                     "What-if plans a sweep on it without any download")
        for button in (self.folder_button, self.shape_button):
            button.setAutoDefault(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.folder_button)
        layout.addWidget(self.shape_button)
        self.folder_button.clicked.connect(self.choose_folder)
        self.shape_button.clicked.connect(self.shape_wanted)
        self.hide()

    def offer(self) -> None:
        self.label.setStyleSheet("")
        self.label.setText(LINE)
        self.show()

    def choose_folder(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Local model folder (with its config.json)")
        if not chosen:
            return
        folder = Path(chosen)
        if not (folder / "config.json").is_file():
            # Said here, next to the button: the status line above still says why the Hub failed.
            self.label.setStyleSheet(f"color: {RED}")
            self.label.setText(f"{folder.name} has no config.json: choose the folder that holds the model's "
                               "config.json")
            return
        self.offer()
        self.folder_chosen.emit(folder)


def select_shape(view: QTableView, model: TableModel, repo: str | None) -> str:
    """Selects the shipped shape that mirrors `repo` (the model asked for), else the first; its name."""
    shapes = [model.row(i) for i in range(model.rowCount())]
    i = next((i for i, shape in enumerate(shapes) if repo and shape.repo.lower() == repo.lower()), 0)
    flags = QItemSelectionModel.SelectionFlag
    view.selectionModel().select(model.index(i, 0), flags.ClearAndSelect | flags.Rows)
    view.scrollTo(model.index(i, 0))
    view.setFocus()
    return shapes[i].name
