"""The Compare charts, built with pyqtgraph from a CompareView's data (workbench.usecases.compare_view):
one colour per method and one shade per N (workbench.report.palette), the legend in its own cell
right of the data, a caption line with the run conditions. Exports are in app.widgets.chart_export."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPen

from app.widgets import theme, what_if_look
from workbench.analysis import recommend, series as points
from workbench.report import palette
from workbench.usecases.compare_view import ChartData

PREDICTION_TIP = ("Points: measured speedup (± 95% interval). Dashed line and band: the speedup predicted for "
                  "every N up to the largest one run, T(N) / c(N), with its 95% interval. T(N) = 1 + the "
                  "per-position acceptance measured at the largest N summed to N (tokens per step); c(N) = "
                  "1 + alpha + beta N, the step cost against a baseline step, fitted to the N that were run. "
                  "See docs/recommend-n.md")

CHARTS = {
    "per_position": ("Per-position acceptance", "acceptance (share of drafts)", "draft position",
                     "p[i] = accepted at draft position i / drafts: a survival curve per configuration"),
    "throughput": ("Output throughput against N", "output throughput (tokens/s)", "N (speculative tokens)",
                   "Mean output tokens/s per N, one line per method; dashed grey: the matching baseline"),
    "efficiency": ("Efficiency against N", "efficiency (speedup / MAL)", "N (speculative tokens)",
                   "How much of the ideal gain (MAL x) was realised; 1.0 would be a free draft"),
    "mal": ("MAL against N", "MAL (tokens / step)", "N (speculative tokens)",
            "Mean acceptance length = 1 + accepted / drafts"),
    "prediction": ("Speedup against N, measured and predicted", "speedup (x baseline)", "N (speculative tokens)",
                   PREDICTION_TIP),
    "concurrency": ("Speedup against concurrency", "speedup (x baseline)", "concurrency (requests in flight)",
                    "Where speculation stops paying: speedup at each concurrency, 1.0 = baseline"),
    "by_category": ("MAL by prompt category", "MAL (tokens / step)", "prompt category",
                    "Per-request attribution (vLLM's per-request spec-decode metrics): 1 + accepted / drafts "
                    "summed over the requests of each category"),
    "by_prompt_length": ("MAL against prompt length", "MAL (tokens / step)", "prompt length (tokens, bin start)",
                         "Per-request attribution: MAL of the requests whose prompt length falls in each bin"),
    "energy": ("Energy per output token against N", "energy (J / output token)", "N (speculative tokens)",
               "GPU energy over the measurement window (power summed over the run's GPUs, integrated) / "
               "output tokens; dashed grey: the matching baseline. Needs GPU power readings"),
    "gpus": ("GPU power per configuration", "mean power (W)", "configuration",
             "Mean power of each GPU over a run's window, and their sum ('all GPUs') for tensor-parallel "
             "runs; hover a bar for utilisation"),
    "breakeven": ("Speedup against p1 (what-if)", "speedup (x baseline)",
                  "acceptance at draft position 1 (p1, imposed shape scaled)",
                  "What-if runs only (dummy weights, acceptance imposed): the speedup each configuration would "
                  "reach at every p1, from its measured step cost (MAL read back / speedup): speedup = MAL / "
                  "step cost. Filled point: the run itself. It pays above the dashed line at 1.0"),
}
# Charts of what-if runs alone, drawn in the what-if section, never among the measured ones.
WHAT_IF_CHARTS = ("breakeven",)
# Charts whose x axis is a fraction, not whole numbers.
FRACTION_X = ("breakeven",)

SHORT = {"math_word": "math words", "competition_math": "comp. math", "function_completion": "functions",
         "programming_task": "prog. tasks"}
# Why a chart is not drawn, in one line.
EMPTY = {"per_position": "no speculative run with a per-position acceptance curve",
         "throughput": "no completed speculative run",
         "efficiency": "no speculative run with a matching baseline",
         "mal": "no speculative run with a MAL",
         "prediction": "needs a baseline and runs of one method at two or more N",
         "concurrency": "needs runs of one configuration at two or more concurrencies",
         "by_category": "needs per-request spec-decode metrics from a workload with prompt categories",
         "by_prompt_length": "needs per-request spec-decode metrics (vLLM's per-request statistics)",
         "energy": "needs GPU power readings (NVIDIA or AMD telemetry); this run had none",
         "gpus": "needs GPU power readings (NVIDIA or AMD telemetry); this run had none",
         "breakeven": "needs what-if runs (acceptance imposed) and their what-if baseline"}
# Concurrencies are told apart by the line's dash, colours being the method's.
DASHES = [Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine,
          Qt.PenStyle.DashDotDotLine]
LEGEND_ROW = 22  # pixels per legend entry

P = TypeVar("P", bound=points.Point)
# The points drawn against N with a baseline line, and those drawn as grouped bars.
NPoint = TypeVar("NPoint", points.ThroughputPoint, points.EnergyPoint)
Bar = TypeVar("Bar", points.CategoryPoint, points.GpuBar)


class SideLegend(pg.LegendItem):
    """A legend that takes a cell of the plot's layout (right of the data) instead of floating
    over it: its size is its contents', which the layout respects."""

    def __init__(self) -> None:
        super().__init__(offset=None, verSpacing=-4, labelTextSize="9pt")

    def updateSize(self) -> None:  # noqa: N802 - Qt's name
        width = height = 0.0
        for row in range(self.layout.rowCount()):
            row_height, row_width = 0.0, 0.0
            for col in range(self.layout.columnCount()):
                item = self.layout.itemAt(row, col)
                if item:
                    row_width += item.preferredWidth() + 5
                    row_height = max(row_height, item.preferredHeight())
            width, height = max(width, row_width), height + row_height
        self.setMinimumSize(width + 4, height + 4)
        self.setMaximumSize(width + 4, height + 4)
        self.updateGeometry()


def side_legend(w: pg.PlotWidget) -> SideLegend:
    """The plot's legend in the cell right of its axes; named items added later join it."""
    pi = w.getPlotItem()
    pi.legend = SideLegend()
    pi.layout.addItem(pi.legend, 2, 3)
    pi.layout.setAlignment(pi.legend, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    return pi.legend


def new_plot(name: str) -> pg.PlotWidget:
    w = theme.plot(*CHARTS[name])
    pi = w.getPlotItem()
    side_legend(w)
    pi.caption = pg.LabelItem("", size="8pt", color="#666666", justify="left")
    pi.layout.addItem(pi.caption, 4, 0, 1, 4)
    if name not in FRACTION_X:
        theme.integer_ticks(w)
    # Ratios like an efficiency of 0.5 must not be shown as "500 (x0.001)".
    for side in ("left", "bottom"):
        w.getAxis(side).enableAutoSIPrefix(False)
    return w


def fit_legend(w: pg.PlotWidget, height: int) -> None:
    """Enough legend columns that every entry fits the plot's height."""
    legend = w.getPlotItem().legend
    if legend is None:  # a plot without a legend (the Train page's curves)
        return
    fit = max(1, int((height - 110) / LEGEND_ROW))
    columns = max(1, math.ceil(len(legend.items) / fit))
    if legend.columnCount != columns:
        legend.setColumnCount(columns)
    legend.updateSize()


def _series(rows: Sequence[P]) -> dict[str, list[P]]:
    """The points by the series they are on, in the order given."""
    out: dict[str, list[P]] = {}
    for r in rows:
        out.setdefault(r.series, []).append(r)
    return out


def row_colour(r: points.Point) -> str:
    return palette.colour(r.method, r.config_n)


def _dash(rows_by_series: Mapping[str, Sequence[points.Point]]) -> dict[int | None, Qt.PenStyle]:
    """A measured series' concurrency by its dash (what-if series have a dash of their own)."""
    firsts = [items[0] for items in rows_by_series.values() if not items[0].what_if]
    levels = sorted({r.concurrency for r in firsts if r.concurrency is not None})
    return {c: DASHES[i % len(DASHES)] for i, c in enumerate(levels)}


def _looks(rows_by_series: Mapping[str, Sequence[points.Point]]) -> dict[str, dict[str, Any]]:
    """Each series' look as _line's keywords: a measured one's dash tells its concurrency; a
    what-if one is drawn apart (app.widgets.what_if_look), its marker telling its concurrency."""
    dash, shape = _dash(rows_by_series), what_if_look.symbols(rows_by_series)
    looks: dict[str, dict[str, Any]] = {}
    for name, items in rows_by_series.items():
        c = items[0].concurrency
        looks[name] = ({"what_if": True, "symbol": shape.get(c, "o")} if items[0].what_if
                       else {"style": dash.get(c, Qt.PenStyle.SolidLine)})
    return looks


def _line(w: pg.PlotWidget, colour: str, x: Sequence[float | None], y: Sequence[float | None], name: str,
          ci: Sequence[float | None] | None = None, style: Qt.PenStyle = Qt.PenStyle.SolidLine,
          what_if: bool = False, symbol: str = "o") -> None:
    # A line runs from left to right: the analysis may hand its points in another order (prompt
    # length bins sorted as text put 128 before 73), which would draw the line back and forth.
    order = np.argsort(np.asarray(x, float), kind="stable")
    x, y = [x[i] for i in order], [y[i] for i in order]
    ci = None if ci is None else [ci[i] for i in order]
    if what_if:
        what_if_look.line(w, colour, x, y, name, ci, symbol)
        return
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    w.plot(xs, ys, name=name, pen=pg.mkPen(colour, width=2, style=style), symbol="o", symbolSize=7,
           symbolBrush=colour, symbolPen=pg.mkPen(colour))
    what_if_look.error_bars(w, xs, ys, ci, pg.mkPen(colour))


def _lines(w: pg.PlotWidget, rows: Sequence[P], x: Callable[[P], float | None],
           y: Callable[[P], float | None]) -> None:
    """One line per series of `rows`, (x, y) a point, each in its series' look."""
    series = _series(rows)
    looks = _looks(series)
    for s, items in series.items():
        _line(w, row_colour(items[0]), [x(r) for r in items], [y(r) for r in items], s, **looks[s])


def _against_n(w: pg.PlotWidget, rows: Sequence[NPoint], figure: Callable[[NPoint], float | None],
               baseline_of: Callable[[NPoint], float | None], unit: str, fmt: str,
               ci: Callable[[NPoint], float | None] | None = None) -> None:
    """One line per method and context against N (the method's colour, the context's dash), and a
    grey line per context at its baseline's value (`baseline_of` a point), named in the legend
    with that value."""
    series = _series(rows)
    looks = _looks(series)
    dash = _dash(series)
    baselines: dict[tuple[str, bool], tuple[float, Qt.PenStyle]] = {}
    ns = [r.n for r in rows if r.n is not None]
    for name, items in series.items():
        _line(w, row_colour(items[0]), [r.n for r in items],
              [np.nan if figure(r) is None else figure(r) for r in items], name,
              [ci(r) for r in items] if ci else None, **looks[name])
        base = baseline_of(items[0])
        if base:
            # A what-if run's baseline is the what-if one (dummy weights): its line is marked too.
            baselines[(name.split(" · ", 1)[1], items[0].what_if)] = (
                base, dash.get(items[0].concurrency, Qt.PenStyle.SolidLine))
    for (context, what_if), (base, style) in sorted(baselines.items()):
        solid = style == Qt.PenStyle.SolidLine
        line_pen = (what_if_look.pen(palette.BASELINE) if what_if else
                    pg.mkPen(palette.BASELINE, width=2, style=Qt.PenStyle.DashLine if solid else style))
        w.plot(_span(ns), [base, base], pen=line_pen,
               name=f"baseline{' (what-if)' if what_if else ''} · {context}: {fmt.format(base)} {unit}")


def _bars(w: pg.PlotWidget, groups: list[str], series: Mapping[str, Sequence[Bar]], x_of: Callable[[Bar], int],
          height_of: Callable[[Bar], float | None], colour_of: Callable[[int, Bar], str],
          tip_of: Callable[[Sequence[Bar]], str] | None = None) -> None:
    """Grouped bars: one bar series per legend entry, its colour the entry's swatch; a what-if
    row's bar pale and dash-outlined."""
    w.getAxis("bottom").setTicks([[(i + 1, g) for i, g in enumerate(groups)]])
    width = 0.8 / max(1, len(series))
    for i, (name, rows) in enumerate(series.items()):
        xs = [x_of(r) + 1 - 0.4 + width * (i + 0.5) for r in rows]
        colour = colour_of(i, rows[0])
        looks = [what_if_look.bar_look(colour, r.what_if) for r in rows]
        bars = pg.BarGraphItem(x=xs, height=[height_of(r) for r in rows], width=width * 0.9,
                               brush=colour, pen=pg.mkPen(colour), brushes=[b for b, _ in looks],
                               pens=[p for _, p in looks])
        if tip_of:
            bars.setToolTip(tip_of(rows))
        w.addItem(bars)
        w.getPlotItem().legend.addItem(bars, name)


def draw(w: pg.PlotWidget, name: str, data: ChartData, caption: str = "") -> bool:
    """Draws the chart; False (and nothing drawn) when it has no data: EMPTY[name] says why."""
    w.clear()
    pi = w.getPlotItem()
    pi.legend.clear()
    pi.caption.setText(caption)
    w.getAxis("bottom").setTicks(None)
    if name in WHAT_IF_CHARTS:
        w.setTitle(CHARTS[name][0])  # until the rows say which acceptance was imposed
    if not data.has(name):
        return False
    if name not in WHAT_IF_CHARTS:
        pi.caption.setText(caption + what_if_look.note(data.rows(name)))
    if name == "per_position":
        _lines(w, data.per_position, lambda r: r.position, lambda r: r.acceptance)
        w.setYRange(0, 1.05)
    elif name == "throughput":
        _against_n(w, data.throughput, lambda r: r.tok_s, lambda r: r.baseline_tok_s, "tok/s", "{:.1f}",
                   ci=lambda r: r.tok_s_ci95)
    elif name in ("efficiency", "mal"):
        figure: Callable[[points.EfficiencyPoint], float | None] = (
            (lambda r: r.efficiency) if name == "efficiency" else (lambda r: r.mal))
        _lines(w, [r for r in data.efficiency if figure(r) is not None], lambda r: r.n, figure)
    elif name == "prediction":
        draw_prediction(w, data.prediction)
    elif name == "by_category":
        categories = sorted({r.category for r in data.by_category})
        _bars(w, [SHORT.get(c, c) for c in categories], _series(data.by_category),
              lambda r: categories.index(r.category), lambda r: r.mal, lambda i, r: row_colour(r))
    elif name == "by_prompt_length":
        _lines(w, data.by_prompt_length, lambda r: r.prompt_tokens_from, lambda r: r.mal)
    elif name == "energy":
        _against_n(w, data.energy, lambda r: r.joules_per_token, lambda r: r.baseline_joules_per_token, "J/token",
                   "{:.3f}")
    elif name == "gpus":
        draw_gpus(w, data.gpus)
    elif name == "concurrency":
        for s, items in _series(data.concurrency).items():
            _line(w, row_colour(items[0]), [r.concurrency for r in items], [r.speedup for r in items], s,
                  [r.speedup_ci95 for r in items], what_if=items[0].what_if)
        # A concurrency chart's points all have one: they are made from configurations.
        _unity(w, [r.concurrency for r in data.concurrency if r.concurrency is not None])
    elif name == "breakeven":
        w.setTitle(what_if_look.title(CHARTS[name][0], data.breakeven))
        # A long source must not widen the data's column and push the legend out of the plot.
        pi.titleLabel.setMinimumWidth(0)
        what_if_look.draw_breakeven(w, data.breakeven)
    return True


def draw_gpus(w: pg.PlotWidget, rows: list[points.GpuBar]) -> None:
    """Each configuration's GPUs as grouped bars of mean power, one colour per GPU."""
    configs = list(dict.fromkeys(f"#{r.run} {r.config}" for r in rows))
    w.getAxis("bottom").setStyle(tickFont=theme.small_font())
    by_gpu: dict[str, list[points.GpuBar]] = {}
    for r in rows:
        by_gpu.setdefault(r.gpu, []).append(r)
    _bars(w, [c.split(" ", 1)[1].replace(" · ", " ") for c in configs], by_gpu,
          lambda r: configs.index(f"#{r.run} {r.config}"), lambda r: r.power_w, lambda i, r: palette.other(i),
          lambda items: "\n".join(f"{r.config}: {r.power_w:.0f} W"
                                  + (f", {r.util_pct:.0f} % busy" if r.util_pct is not None else "")
                                  for r in items))


def _span(xs: Sequence[float]) -> list[float]:
    """Where a reference line runs: over the data's x range, or half a step either side of a lone
    x. A line from x to x is drawn as nothing, and the view, ranged on the error bars' caps
    alone, showed those caps across the whole plot."""
    low, high = min(xs), max(xs)
    return [low, high] if high > low else [low - 0.5, high + 0.5]


def _unity(w: pg.PlotWidget, xs: Sequence[float]) -> None:
    """Speedup 1.0 (the baseline) as a grey line over the data's range, named in the legend."""
    w.plot(_span(xs), [1.0, 1.0], name="baseline (speedup 1.0)",
           pen=pg.mkPen(palette.BASELINE, width=2, style=Qt.PenStyle.DotLine))


def draw_prediction(w: pg.PlotWidget, rows: list[recommend.PredictionPoint]) -> None:
    for series, rs in _series(rows).items():
        x = np.array([r.n for r in rs], float)
        colour = row_colour(rs[0])
        low = pg.PlotDataItem(x, [r.low for r in rs], pen=pg.mkPen(None))
        high = pg.PlotDataItem(x, [r.high for r in rs], pen=pg.mkPen(None))
        band_colour = pg.mkColor(colour)
        band_colour.setAlpha(50)
        band = pg.FillBetweenItem(low, high, brush=pg.mkBrush(band_colour))
        band.setToolTip(f"{series}: predicted speedup's 95% interval (measurement noise of the runs it was "
                        f"fitted to, and of the baseline)")
        for item in (low, high, band):
            w.addItem(item)
        line = w.plot(x, [r.predicted for r in rs], name=f"{series} · predicted",
                      pen=pg.mkPen(colour, width=2, style=Qt.PenStyle.DashLine))
        line.setToolTip(f"{series}: predicted speedup T(N) / c(N); best N = {rs[0].best_n}"
                        + (" (a close rival is within noise)" if rs[0].uncertain else "")
                        + f". Step cost model for {recommend.FAMILIES[rs[0].family]}")
        seen = [r for r in rs if r.measured is not None]
        if seen:
            mx = np.array([r.n for r in seen], float)
            my = np.array([r.measured for r in seen], float)
            w.plot(mx, my, name=f"{series} · measured", pen=None, symbol="o", symbolSize=8, symbolBrush=colour,
                   symbolPen=pg.mkPen(colour))
            what_if_look.error_bars(w, mx, my, [r.measured_ci95 for r in seen], pg.mkPen(colour))
    _unity(w, [r.n for r in rows])


def right_axis_curve(plot: pg.PlotWidget, axis_label: str, name: str, pen: QPen,
                     y_range: tuple[float, float]) -> tuple[pg.ViewBox, pg.PlotDataItem]:
    """A second curve on its own y axis at the right of `plot` (a view box sharing the x axis),
    listed in the plot's legend: returns the view and the curve."""
    pi = plot.getPlotItem()
    view = pg.ViewBox()
    pi.showAxis("right")
    pi.scene().addItem(view)
    pi.getAxis("right").linkToView(view)
    pi.getAxis("right").setLabel(axis_label)
    view.setXLink(pi)
    view.setYRange(*y_range)
    # A data item, downsampled and clipped as the plot's own curves are (the plot's settings do
    # not reach a second view): a long history is drawn at screen resolution.
    curve = pg.PlotDataItem(pen=pen)
    curve.setDownsampling(auto=True, method="peak")
    curve.setClipToView(True)
    view.addItem(curve)
    pi.legend.addItem(curve, name)
    pi.vb.sigResized.connect(lambda: view.setGeometry(pi.vb.sceneBoundingRect()))
    return view, curve
