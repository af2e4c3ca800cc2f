"""Under Compare's answer, what it says of the baseline: when the answer is empty for want of one,
why, in one sentence, and the action that gets one (the experiment's plan run again: its failed
baseline runs first, then the speculative runs that waited for it); when History pinned a baseline,
which run it is and where it came from."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget


class BaselineNote(QWidget):
    run_again = Signal(int)  # the experiment whose baseline to run again

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.experiment: int | None = None
        self.label = QLabel("")
        self.label.setWordWrap(True)
        self.button = QPushButton("Run the baseline again")
        self.button.setToolTip("Runs this experiment's plan again: its failed baseline runs first, then the "
                               "speculative runs that waited for it; completed runs are kept")
        self.button.clicked.connect(lambda: self.experiment is not None and self.run_again.emit(self.experiment))
        box = QHBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.label, 1)
        box.addWidget(self.button)
        self.setVisible(False)

    def show_pinned(self, text: str) -> None:
        """The pinned baseline in words ("" hides the note); no action here: the pin is History's."""
        self.experiment = None
        self.label.setText(text)
        self.button.setVisible(False)
        self.setVisible(bool(text))

    def show_reason(self, reason: str, experiments: tuple[int, ...]) -> None:
        """`reason` ("" hides the note); the action only for the runs of one experiment."""
        self.experiment = experiments[0] if len(experiments) == 1 else None
        self.label.setText(reason)
        self.button.setVisible(self.experiment is not None)
        self.setVisible(bool(reason))
