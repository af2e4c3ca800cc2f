"""The demo plans one click away on the Experiment page: the quick one (the app's first plan) and the full one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from workbench import paths

QUICK = paths.resources_dir() / "plans" / "demo-quick.toml"
FULL = paths.resources_dir() / "plans" / "demo.toml"


class DemoBar(QWidget):
    chosen = Signal(object)  # the plan file's Path

    def __init__(self, parent=None):
        super().__init__(parent)
        quick = QPushButton("Quick demo")
        quick.setToolTip("Baseline, n-gram and a draft model at two N each on the demo target: "
                         "about 5 minutes on 2 CPU cores")
        quick.clicked.connect(lambda: self.chosen.emit(QUICK))
        full = QPushButton("Full demo")
        full.setToolTip("Every N of n-gram (1–5) and the draft model (1–4) at concurrency 1 and 4: "
                        "20 runs, about 13 minutes on 2 CPU cores")
        full.clicked.connect(lambda: self.chosen.emit(FULL))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Demo plans:"))
        layout.addWidget(quick)
        layout.addWidget(full)
        layout.addStretch(1)

    @staticmethod
    def is_demo(path: Path | None) -> bool:
        return path in (QUICK, FULL)
