"""How what-if series look, apart from measured ones in every chart, and the break-even chart.

A what-if run's acceptance was imposed, so its line must never pass for a measured one: it is
drawn in long dashes (no measured pen has them: those tell concurrencies apart by Qt's own dash
styles), in a lighter shade of its configuration's colour, with hollow markers whose shape tells
its concurrency, and its legend entry says "(what-if)" (workbench.analysis.compare marks the
series). Bars of a what-if configuration are pale with a dashed outline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QPen

from workbench.analysis import breakeven, series as points
from workbench.report import palette

DASH_PATTERN = [7, 4]      # in pen widths: longer dashes than Qt.DashLine's 4-2
SYMBOLS = ["o", "t", "s", "d", "star", "p", "h"]
LIGHT = 0.35               # how far towards white a what-if line's colour is pushed
BAR_ALPHA = 70


def pen(colour: str, width: float = 2) -> QPen:
    p = pg.mkPen(palette.lighter(colour, LIGHT), width=width)
    p.setStyle(Qt.PenStyle.CustomDashLine)
    p.setDashPattern(DASH_PATTERN)
    return p


def line(w: pg.PlotWidget, colour: str, x: Sequence[float | None], y: Sequence[float | None], name: str | None,
         ci: Sequence[float | None] | None = None, symbol: str | None = "o") -> pg.PlotDataItem:
    """A what-if series: dashed, lighter, hollow markers (the error bars dashed too)."""
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    marks = {} if symbol is None else {"symbol": symbol, "symbolSize": 8, "symbolBrush": pg.mkBrush(None),
                                       "symbolPen": pg.mkPen(colour, width=1.5)}
    item = w.plot(xs, ys, name=name, pen=pen(colour), **marks)
    error_bars(w, xs, ys, ci, pen(colour, 1))
    return item


def error_bars(w: pg.PlotWidget, x: ArrayLike, y: ArrayLike, ci: Sequence[float | None] | None,
               bar_pen: QPen) -> None:
    """95% intervals where a point has one: a point of a single run gets no bar (a bar of zero
    height would still draw its beams, an interval that was never measured)."""
    if ci is None:
        return
    half = np.array([np.nan if v is None else v for v in ci], float)
    keep = np.isfinite(half)
    if keep.any():
        w.addItem(pg.ErrorBarItem(x=np.asarray(x, float)[keep], y=np.asarray(y, float)[keep], height=2 * half[keep],
                                  beam=0.15, pen=bar_pen))


def symbols(rows_by_series: Mapping[str, Sequence[points.Point]]) -> dict[int | None, str]:
    """A what-if series' concurrency by its marker's shape (its dash being the what-if one)."""
    firsts = [items[0] for items in rows_by_series.values() if items[0].what_if]
    levels = sorted({r.concurrency for r in firsts if r.concurrency is not None})
    return {c: SYMBOLS[i % len(SYMBOLS)] for i, c in enumerate(levels)}


def bar_look(colour: str, what_if: bool) -> tuple[QBrush, QPen]:
    """(brush, pen) of one bar: pale and dash-outlined when what-if."""
    if not what_if:
        return pg.mkBrush(colour), pg.mkPen(colour)
    fill = pg.mkColor(colour)
    fill.setAlpha(BAR_ALPHA)
    outline = pg.mkPen(colour, width=1.5)
    outline.setStyle(Qt.PenStyle.DashLine)
    return pg.mkBrush(fill), outline


def note(rows: Sequence[points.Point | points.GpuBar]) -> str:
    """The caption's line about what-if series in a chart, or "" when it has none."""
    marked = [r for r in rows if r.what_if]
    if not marked:
        return ""
    return (" · dashed, pale, hollow markers: what-if (acceptance imposed: "
            f"{breakeven.source_text(marked)}; dummy weights, not measured acceptance)")


def title(base: str, rows: list[breakeven.BreakEvenPoint]) -> str:
    return f"{base} · acceptance imposed: {breakeven.source_text(rows)}"


def draw_breakeven(w: pg.PlotWidget, rows: list[breakeven.BreakEvenPoint]) -> None:
    """Speedup against position-1 acceptance, one dashed line per configuration x concurrency (its
    marker the concurrency's), the run's own point filled on it, and a dashed line at 1.0."""
    series: dict[str, list[breakeven.BreakEvenPoint]] = {}
    for r in rows:
        series.setdefault(r.series, []).append(r)
    shape_of = symbols(series)
    legend = w.getPlotItem().legend
    for name, items in series.items():
        first = items[0]
        colour = palette.colour(first.method, first.config_n)
        symbol = shape_of.get(first.concurrency, "o")
        # No markers along the curve, which would hide where the run itself was: only its point,
        # and the legend's sample shows both (an item only the legend holds).
        line(w, colour, [r.p1 for r in items], [r.speedup for r in items], None, symbol=None)
        sample = pg.PlotDataItem([], [], pen=pen(colour), symbol=symbol)
        # The legend draws a symbol from the item's scatter, which empty data never styles.
        sample.scatter.setBrush(pg.mkBrush(colour))
        sample.scatter.setPen(pg.mkPen(colour))
        sample.scatter.setSize(9)
        legend.addItem(sample, name)
        if first.measured_p1 is not None:
            point = w.plot([first.measured_p1], [first.speedup_measured], pen=None,
                           symbol=symbol, symbolSize=10,
                           symbolBrush=pg.mkBrush(colour), symbolPen=pg.mkPen(colour))
            point.setToolTip(f"{name}: measured at the imposed curve, speedup {first.speedup_measured:.2f}, "
                             f"step cost {first.step_cost:.2f} baseline steps")
    unity = pg.mkPen(palette.BASELINE, width=2)
    unity.setStyle(Qt.PenStyle.DashLine)
    w.plot([0.0, 1.0], [1.0, 1.0], name="speedup 1.0 (break-even)", pen=unity)
    w.setXRange(0, 1.0, padding=0.02)
