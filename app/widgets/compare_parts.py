"""Two parts of the Compare page as widgets of their own: the chart pane (a chooser of the charts
with data, the line that says why the others are not drawn, the plots stacked) and the export bar
(the PNG size and DPI, the export and report buttons). The page wires them to its view."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSpinBox, QStackedWidget, QVBoxLayout, QWidget

from app.widgets import charts as chartlib
from workbench.usecases.chart_names import CHART_NAMES


class ChartPane(QWidget):
    """Every chart's plot, one shown at a time; the page offers only the charts its view has data for."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plots = {name: chartlib.new_plot(name) for name in CHART_NAMES}
        self.stack = QStackedWidget()
        for name in CHART_NAMES:
            self.stack.addWidget(self.plots[name])
        self.chooser = QComboBox()
        self.chooser.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.chooser.setToolTip("The chart shown; charts without data are not offered (the line beside says why)")
        self.missing = QLabel("")
        self.missing.setWordWrap(True)
        self.missing.setStyleSheet("color: palette(placeholder-text)")
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Chart"))
        bar.addWidget(self.chooser)
        bar.addWidget(self.missing, 1)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 4, 0, 0)
        box.addLayout(bar)
        box.addWidget(self.stack, 1)


class ExportBar(QWidget):
    """The size every chart is exported at, and the buttons that export the charts or write the report."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.width_box = QSpinBox(minimum=16, maximum=20000, value=1200, suffix=" px")
        self.height_box = QSpinBox(minimum=16, maximum=20000, value=800, suffix=" px")
        self.dpi_box = QSpinBox(minimum=30, maximum=2400, value=150, suffix=" dpi")
        self.export_button = QPushButton("Export charts and data…")
        self.export_button.setToolTip("Every chart with data as PNG (this size and DPI), SVG and PDF, with a caption "
                                      "of the run conditions, and its data as CSV and JSON (Ctrl+E)")
        self.export_button.setShortcut("Ctrl+E")
        self.report_button = QPushButton("HTML report…")
        self.report_button.setToolTip("A self-contained report: the answer, charts, runs, exact vLLM commands and "
                                      "versions")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addStretch(1)
        for label, w in (("PNG width", self.width_box), ("height", self.height_box), ("", self.dpi_box)):
            if label:
                row.addWidget(QLabel(label))
            row.addWidget(w)
        row.addWidget(self.export_button)
        row.addWidget(self.report_button)
