"""The tags and notes of the run selected in History, editable in place."""

from __future__ import annotations

from PySide6.QtCore import QKeyCombination, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QWidget

from app.models.runs_model import HistoryRow


class RunNotes(QWidget):
    """Emits `save(run_id, tags, notes)`; the page writes them off the GUI thread and reads the runs
    again, which shows them in the table."""

    save = Signal(int, str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run_id: int | None = None
        self.label = QLabel("Notes")
        self.tags = QLineEdit()
        self.tags.setPlaceholderText("tags, comma or space separated")
        self.tags.setToolTip("Your tags on the selected run: searchable (Ctrl+F) and shown in the Tags column")
        self.tags.returnPressed.connect(self._save)
        self.notes = QPlainTextEdit()
        self.notes.setPlaceholderText("Notes on the selected run")
        self.notes.setToolTip("Your notes on the selected run: searchable (Ctrl+F); Ctrl+Enter saves")
        # Three lines: the table above keeps the room, on a 1280x800 screen too.
        self.notes.setFixedHeight(self.notes.fontMetrics().lineSpacing() * 3 + 12)
        self.save_button = QPushButton("Save notes")
        self.save_button.setToolTip("Store the tags and notes with the run in the results file (Ctrl+Enter, "
                                    "or Enter in the tags field)")
        self.save_button.clicked.connect(self._save)
        # Ctrl+Enter, as a multi-line field submits; Ctrl+S is the window's Save plan. Only while
        # the typing is here, so it does nothing elsewhere on the page.
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            QShortcut(QKeySequence(QKeyCombination(Qt.Modifier.CTRL, key)), self, self._save,
                      context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.tags, 1)
        layout.addWidget(self.notes, 2)
        layout.addWidget(self.save_button)
        self.show_run(None)

    def show_run(self, row: HistoryRow | None) -> None:
        """The run whose notes are edited (None: no single run selected, nothing to edit). The same
        run shown again keeps what is being typed: the page refreshes on every event of a sweep."""
        if row is not None and row.run.id == self.run_id:
            return
        self.run_id = None if row is None else row.run.id
        self.label.setText("Notes" if row is None else f"Run {row.run.id}")
        self.tags.setText("" if row is None else row.tags)
        self.notes.setPlainText("" if row is None else row.notes)
        for widget in (self.tags, self.notes, self.save_button):
            widget.setEnabled(row is not None)

    def _save(self) -> None:
        if self.run_id is not None:
            self.save.emit(self.run_id, self.tags.text(), self.notes.toPlainText())
