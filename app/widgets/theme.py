"""Colours and fonts that follow the system's light or dark scheme."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QGuiApplication

# Colour-blind-safe (Okabe–Ito) series colours.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442"]


def dark() -> bool:
    app = QGuiApplication.instance()
    # Only a GUI application has a colour scheme (a bare QCoreApplication has no style hints).
    return isinstance(app, QGuiApplication) and app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def apply() -> None:
    """pyqtgraph's background and foreground for the current scheme (before plots are made)."""
    if dark():
        pg.setConfigOptions(background="#1e1e1e", foreground="#dddddd", antialias=False)
    else:
        pg.setConfigOptions(background="w", foreground="#222222", antialias=False)


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def mono() -> QFont:
    font = QFont("DejaVu Sans Mono")
    font.setStyleHint(QFont.StyleHint.Monospace)
    return font


def small_font() -> QFont:
    font = QFont()
    font.setPointSizeF(8)
    return font


def integer_ticks(plot: pg.PlotWidget) -> None:
    """Draft positions, N, request numbers and concurrencies are whole numbers: no 1.5 ticks."""
    axis = plot.getAxis("bottom")
    original = axis.tickValues

    def whole(minVal: float, maxVal: float,  # noqa: N803 - pyqtgraph's names
              size: float) -> list[tuple[float, list[float]]]:
        return [(max(1.0, spacing), [v for v in values if float(v).is_integer()])
                for spacing, values in original(minVal, maxVal, size)]

    axis.tickValues = whole


def plot(title: str, left: str, bottom: str, tip: str) -> pg.PlotWidget:
    """A titled plot with labelled axes (units in the labels), a grid and a tooltip defining it."""
    w = pg.PlotWidget()
    w.setTitle(title)
    w.setLabel("left", left)
    w.setLabel("bottom", bottom)
    w.showGrid(x=True, y=True, alpha=0.2)
    w.setToolTip(tip)
    return w
