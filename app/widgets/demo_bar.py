"""The demo plans one click away on the Experiment page: the quick one (the app's first plan) and the full one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from workbench import paths
from workbench.usecases import demo_time

QUICK = paths.resources_dir() / "plans" / "demo-quick.toml"
FULL = paths.resources_dir() / "plans" / "demo.toml"


class DemoBar(QWidget):
    chosen = Signal(object)  # the plan file's Path

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.quick = quick = QPushButton("Quick demo")
        quick.clicked.connect(lambda: self.chosen.emit(QUICK))
        self.full = full = QPushButton("Full demo")
        full.clicked.connect(lambda: self.chosen.emit(FULL))
        self.refresh()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Demo plans:"))
        layout.addWidget(quick)
        layout.addWidget(full)
        layout.addStretch(1)

    def refresh(self, known: dict[str, dict[str, float]] | None = None) -> None:
        """The tooltips say how long each demo takes here: from what its servers and runs took on
        this machine once a demo has run (called again after each sweep), a rough range before."""
        self.quick.setToolTip(demo_time.tip(
            QUICK, "Loads the quick demo: the baseline and n-gram lookup (N=3) on the demo target, 3 repeats "
            "each, to fill the Compare page", known))
        self.full.setToolTip(demo_time.tip(
            FULL, "Loads the full demo: every N of n-gram lookup (1–5) and the draft model (1–4) at "
            "concurrency 1 and 4", known))

    @staticmethod
    def is_demo(path: Path | None) -> bool:
        return path in (QUICK, FULL)
