"""The Compare page's provenance line: says when the compared runs were measured under different
images, vLLM builds, GPU settings or attention backends, and on which fields."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QLabel, QWidget

from workbench import store
from workbench.usecases.compare_view import provenance_differences


class ProvenanceNote(QLabel):
    """Hidden while every compared run shares one provenance (or none was recorded)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setObjectName("provenanceNote")
        self.setStyleSheet("QLabel#provenanceNote { color: #8a5300; }")
        self.fields: list[str] = []
        self.hide()

    def show_for(self, rows: list[store.RunRecord]) -> None:
        self.show_differences(provenance_differences(rows))

    def show_differences(self, found: list[tuple[str, dict[str, list[int]]]]) -> None:
        """`found` as CompareView.provenance holds it: (label, {value: run ids}) per differing field."""
        self.fields = [label for label, _ in found]
        if not found:
            self.clear()
            self.setToolTip("")
            self.hide()
            return
        parts = [f"{html.escape(label)} ({len(values)} values)" for label, values in found]
        self.setText("<b>Provenance differs</b> between these runs: " + ", ".join(parts)
                     + " — their figures may not compare like for like.")
        self.setToolTip("\n".join(f"{label}: " + "; ".join(f"{v} (runs {', '.join(map(str, ids))})"
                                                             for v, ids in values.items())
                                  for label, values in found))
        self.show()
