"""A live chart's state beyond its data: an empty state that says why in words (no bare 0-1
axes), and ranges that grow in steps as data streams in.

A chart whose x range follows its data exactly changes it at every new point, and every change
makes pyqtgraph lay its axis out again (tick values, their text, the grid): most of the cost of a
redraw. Grown to the next round number past the data instead, the range, hence the axis, stays
put for many redraws. A range the user zoomed or panned to is left alone until the next run.
"""

from __future__ import annotations

import html
import math

import pyqtgraph as pg

GROWTH = 1.25  # the x range covers a quarter more than the data's span, rounded up


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least `x` (> 0)."""
    power = 10.0 ** math.floor(math.log10(x))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= x * (1 - 1e-9):
            return step * power
    return 10 * power


class PlotState:
    """One plot's empty state and ranges. `home_y` is the y range a plot keeps (a share, a
    percentage); without one, y is auto-ranged."""

    def __init__(self, plot: pg.PlotWidget, home_y: tuple[float, float] | None = None, auto_x: bool = False):
        self.plot = plot
        self.home_y = home_y
        self.auto_x = auto_x  # x auto-ranged (a few numbered bars), not grown in steps
        pi = plot.getPlotItem()
        self.vb = pi.getViewBox()
        self.axes = [side for side in ("left", "bottom", "right") if pi.getAxis(side).isVisible()]
        self.text = pg.TextItem(color="#666666", anchor=(0.5, 0.5))
        self.text.setVisible(False)
        self.vb.addItem(self.text, ignoreBounds=True)
        self.shown: str | None = None
        self.following = True  # x follows the data (in steps) until the user zooms or pans
        self.vb.sigRangeChangedManually.connect(self._user_moved)

    def _user_moved(self, *_: object) -> None:
        self.following = False

    def set_empty(self, text: str | None) -> None:
        """Says `text` over an empty plot (axes, grid and legend hidden), or (None) gives the plot
        back its axes."""
        if text == self.shown:
            return
        pi = self.plot.getPlotItem()
        for side in self.axes:
            pi.showAxis(side, text is None)
        if getattr(self.plot, "fast_grid", None) is not None:
            self.plot.fast_grid.setVisible(text is None)
        if pi.legend is not None:
            pi.legend.setVisible(text is None)
        self.vb.setMouseEnabled(x=text is None, y=text is None)  # nothing to zoom into
        if text is not None:
            self.vb.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
            self.text.setTextWidth(max(160, min(360, self.plot.width() - 60)))
            self.text.setHtml(f'<div style="text-align:center">{html.escape(text)}</div>')
            self.text.setPos(0.5, 0.5)
        else:
            self.reset_range()
        self.text.setVisible(text is not None)
        self.shown = text

    def reset_range(self) -> None:
        """Whatever the user zoomed to: y auto-ranged (or its home range), x following the data."""
        self.following = True
        self.vb.enableAutoRange(x=self.auto_x, y=self.home_y is None)
        if self.home_y is not None:
            self.vb.setYRange(*self.home_y, padding=0)

    def follow_x(self, lo: float, hi: float, whole: bool = False, growing: bool = True) -> None:
        """An x range over the data [lo, hi]: grown in steps while `growing`, else just the data;
        `whole`: numbered items (requests) keep half a unit either side."""
        if self.auto_x or not self.following or self.shown is not None or self.vb.state["autoRange"][0]:
            return  # (x auto-ranged: the user asked for it, with the plot's "A" button or its menu)
        if whole:
            lo, hi = lo - 0.5, hi + 0.5
        span = max(hi - lo, 1e-9)
        if not growing:
            self.vb.setXRange(lo, hi)  # pyqtgraph's usual margin, as auto-range leaves
            return
        left, right = self.vb.viewRange()[0]
        if lo == left and hi <= right and (right - lo) <= nice_ceiling(span * GROWTH) * 2:
            return  # the data still fits the range it has (a range far wider is a previous run's)
        self.vb.setXRange(lo, lo + nice_ceiling(span * GROWTH), padding=0)
