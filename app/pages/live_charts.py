"""The Live page's charts: built once, redrawn only where their data changed, and saying in words
why a chart is empty instead of showing bare 0-1 axes.

`LiveCharts` is an object the Live page owns: the plots, the grid they sit in and the line that
stands in for the GPU panels on a host without GPUs. Each draw is handed what it draws (a
`LiveData` of the page's buffers and the run's row), so the charts read nothing the page sets and
every input of a chart is named where the page calls it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGraphicsItem, QGridLayout, QLabel

from app.widgets import fast_grid, theme
from app.widgets.charts import right_axis_curve, side_legend
from app.widgets.plot_state import PlotState
from app.widgets.theme import integer_ticks
from workbench.usecases import live_feed
from workbench.report import palette
from workbench.store import RunRecord

TIPS = {
    "positions": "Per-position acceptance p[i] = accepted tokens at draft position i / drafts: the share "
                 "of steps whose first i draft tokens were all accepted (vLLM's definition). Faint bars: "
                 "earlier runs of the same sweep.",
    "acceptance": "MAL (mean acceptance length) = 1 + accepted / drafts: tokens produced per target step. "
                  "Acceptance rate = accepted / drafted tokens. Both cumulative over the measurement window.",
    "throughput": "Output tokens/s between two scrapes of /metrics (vLLM's generation_tokens counter).",
    "gpu_power": "Power draw per GPU, from NVML (NVIDIA) or amd-smi (AMD) about once a second, and its "
                 "sum over the GPUs a tensor-parallel run uses. Indices are the ones vLLM sees; the vendor "
                 "tool's physical index is given where they differ. Energy per output token = the "
                 "integral of the summed power over the measurement window / output tokens.",
    "gpu_util": "Utilisation per GPU (share of time a kernel ran, as the vendor tool reports it) and the "
                "host's CPU utilisation (psutil).",
    "latency": "Per request: TTFT = time to the first streamed token; ITL = mean gap between streamed "
               "chunks (one chunk can hold several tokens under speculation).",
}
# What each redraw covers: a chart (telemetry: both the power and the utilisation panel).
CHARTS = ("positions", "acceptance", "throughput", "latency", "telemetry")
NO_RUN = "No run shown yet"
WAITING = "No data yet: this chart fills once the run's measurement window starts"
NOTHING = "No data was recorded for this run"
BASELINE = "A baseline drafts nothing: no acceptance to show"
FINAL = ("completed", "partial", "failed", "cancelled")
FAINT_NAMED = 4  # earlier configurations named in the caption under the per-position bars
NO_GPU = ("No GPU on this host: GPU power and utilisation are not measured (host CPU utilisation is "
          "drawn below).")


class Series:
    """A growable numpy buffer (doubling), so a redraw never copies Python lists."""

    def __init__(self, columns: int):
        self.data = np.zeros((256, columns))
        self.n = 0

    def extend(self, rows: np.ndarray) -> None:
        need = self.n + len(rows)
        if need > len(self.data):
            size = len(self.data)
            while size < need:
                size *= 2
            grown = np.zeros((size, self.data.shape[1]))
            grown[: self.n] = self.data[: self.n]
            self.data = grown
        self.data[self.n: need] = rows
        self.n = need

    def column(self, i: int) -> np.ndarray:
        return self.data[: self.n, i]

    def clear(self) -> None:
        self.n = 0


@dataclass(frozen=True)
class LiveData:
    """What the charts draw of the run shown, as the page has read it so far. Made for each draw
    from the page's buffers, not copied: a Series grows in place between two draws."""

    samples: Series         # t, mal, acceptance rate, output tok/s
    requests: Series        # idx, ttft ms, itl ms
    positions: list[float]  # the latest per-position acceptance
    telemetry: list[tuple[Any, ...]]  # (t, source, ...) readings, as the feed gives them
    row: RunRecord | None   # the run as last read; None before the first read
    gpus: bool              # the GPU panels show: the host has GPUs, or the run carries GPU readings


def _plot(title: str, left: str, bottom: str, tip: str) -> pg.PlotWidget:
    w = theme.plot(title, left, bottom, tip)
    fast_grid.add(w)
    w.getPlotItem().setClipToView(True)
    # Long histories are drawn at screen resolution; peaks are kept so spikes stay visible.
    w.getPlotItem().setDownsampling(auto=True, mode="peak")
    for side in ("left", "bottom"):
        w.getAxis(side).enableAutoSIPrefix(False)  # seconds and watts as they are, never "(x0.001)"
    _cache_text(w)
    return w


def _cache_text(w: pg.PlotWidget) -> None:
    """The title and the axes (ticks and labels) painted from a pixmap of their own, made again
    only when they change: a redraw that moves a curve repaints the whole chart, and laying text
    out again is much of that cost."""
    pi = w.getPlotItem()
    items = [pi.titleLabel.item]
    for side in ("left", "bottom", "right"):
        axis = pi.getAxis(side)
        items += [axis, axis.label]
    for item in items:
        item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


class LiveCharts:
    """The Live page's charts in their grid, and which of them need drawing again. The page lays
    out `grid` and `no_gpu`, marks charts stale as rows come, and hands each draw its `LiveData`."""

    def __init__(self) -> None:
        self.stale: set[str] = set(CHARTS)
        self._colour_key: tuple[str, int | None] | None = None
        self._gpu_shown: bool | None = None
        self._last_drawn = -1

        self.pos_plot = _plot("Per-position acceptance", "acceptance (0–1)", "draft position", TIPS["positions"])
        integer_ticks(self.pos_plot)
        self.faint_items: list[pg.BarGraphItem] = []
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.55, brush=palette.BASELINE)
        self.pos_plot.addItem(self.bars)
        pi = self.pos_plot.getPlotItem()
        # What the faint bars are: the sweep's earlier runs, named in their colours.
        self.faint_caption = pg.LabelItem("", size="8pt", color="#666666", justify="left")
        pi.layout.addItem(self.faint_caption, 4, 0, 1, 4)

        self.acc_plot = _plot("MAL and acceptance rate", "MAL (tokens / step)", "time in window (s)",
                              TIPS["acceptance"])
        side_legend(self.acc_plot)
        self.mal_curve = self.acc_plot.plot(name="MAL", pen=pg.mkPen(palette.BASELINE, width=2))
        self.rate_view, self.rate_curve = right_axis_curve(
            self.acc_plot, "acceptance rate (0–1)", "acceptance rate",
            pg.mkPen(palette.other(0), width=2, style=Qt.PenStyle.DashLine), (0, 1.05))

        self.tps_plot = _plot("Output throughput", "output tokens/s", "time in window (s)", TIPS["throughput"])
        self.tps_curve = self.tps_plot.plot(pen=pg.mkPen(palette.BASELINE, width=2))

        self.lat_plot = _plot("Latency per request", "milliseconds (ms)", "request #", TIPS["latency"])
        side_legend(self.lat_plot)
        integer_ticks(self.lat_plot)
        self.ttft_scatter = self.lat_plot.plot(name="TTFT", pen=None, symbol="o", symbolSize=6,
                                               symbolBrush=palette.other(0))
        self.itl_scatter = self.lat_plot.plot(name="ITL (mean)", pen=None, symbol="t", symbolSize=6,
                                              symbolBrush=palette.other(1))

        self.power_plot = _plot("GPU power", "watts (W)", "time (s, from the run's first reading)", TIPS["gpu_power"])
        side_legend(self.power_plot)
        self.util_plot = _plot("GPU and CPU utilisation", "utilisation (%)", "time (s, from the run's first reading)",
                               TIPS["gpu_util"])
        side_legend(self.util_plot)
        self.telemetry_curves: dict[tuple[str, str], pg.PlotDataItem] = {}
        self.states = {"positions": PlotState(self.pos_plot, (0, 1.05), auto_x=True),
                       "acceptance": PlotState(self.acc_plot), "throughput": PlotState(self.tps_plot),
                       "latency": PlotState(self.lat_plot), "power": PlotState(self.power_plot),
                       "util": PlotState(self.util_plot, (0, 105))}
        for state in self.states.values():
            state.reset_range()
            state.set_empty(NO_RUN)
        # What each redraw covers (telemetry: both the power and the utilisation panel).
        self._draws = {"positions": (self._draw_positions, (self.pos_plot,)),
                       "acceptance": (self._draw_acceptance, (self.acc_plot,)),
                       "throughput": (self._draw_throughput, (self.tps_plot,)),
                       "latency": (self._draw_latency, (self.lat_plot,)),
                       "telemetry": (self._draw_telemetry, (self.power_plot, self.util_plot))}

        # The line said instead of the GPU panels; the page places it above its slots.
        self.no_gpu = QLabel(NO_GPU)
        self.no_gpu.setVisible(False)
        self.grid = QGridLayout()
        self.grid.addWidget(self.pos_plot, 0, 0)
        self.grid.addWidget(self.acc_plot, 0, 1)
        self.grid.addWidget(self.tps_plot, 1, 0)
        self.grid.addWidget(self.lat_plot, 1, 1)
        self.grid.addWidget(self.power_plot, 2, 0)
        self.grid.addWidget(self.util_plot, 2, 1)

    # --- what needs drawing ---------------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        return bool(self.stale)

    @dirty.setter
    def dirty(self, value: bool) -> None:
        self.stale = set(CHARTS) if value else set()

    def reset(self) -> None:
        """A new run: the last one's data, ranges and zoom go; every chart is drawn again."""
        for (kind, _), curve in self.telemetry_curves.items():
            (self.power_plot if kind == "power" else self.util_plot).removeItem(curve)
        self.telemetry_curves = {}
        for plot in (self.power_plot, self.util_plot):
            plot.getPlotItem().legend.clear()
        for state in self.states.values():
            if state.shown is None:  # an empty chart has its own range until data comes
                state.reset_range()
        self.rate_view.setYRange(0, 1.05, padding=0)
        self.dirty = True

    def redraw(self, data: LiveData) -> None:
        """Every chart whose data changed, now."""
        for name in CHARTS:
            if name in self.stale:
                self._draw(name, data)

    def draw_some(self, data: LiveData, every: bool) -> None:
        """Every stale chart, or only the first, so that one event-loop pass paints one chart."""
        # In turn from the chart after the last one drawn, so none waits behind a busier one.
        start = self._last_drawn + 1
        for k in range(len(CHARTS)):
            i = (start + k) % len(CHARTS)
            if CHARTS[i] in self.stale:
                self._draw(CHARTS[i], data)
                self._last_drawn = i
                if not every:
                    return

    def _draw(self, name: str, data: LiveData) -> None:
        self.stale.discard(name)
        draw, plots = self._draws[name]
        draw(data)
        # The new range now, not while painting: a range changed there repaints the chart twice.
        for plot in plots:
            for vb in (plot.getPlotItem().getViewBox(), *([self.rate_view] if plot is self.acc_plot else [])):
                vb.updateAutoRange()
                vb.updateMatrix()

    @staticmethod
    def _why_empty(row: RunRecord | None, baseline_too: bool = False) -> str:
        if row is None:
            return NO_RUN
        if baseline_too and row.method == "baseline":
            return BASELINE
        return NOTHING if row.status in FINAL else WAITING

    @staticmethod
    def _baseline(row: RunRecord | None) -> bool:
        return row is not None and row.method == "baseline"

    # --- each chart -----------------------------------------------------------------------------
    def _draw_positions(self, data: LiveData) -> None:
        baseline = self._baseline(data.row)
        self.bars.setOpts(x=np.arange(1, len(data.positions) + 1), height=data.positions)
        for item in self.faint_items:
            item.setVisible(not baseline)
        self.faint_caption.setVisible(not baseline and bool(self.faint_items))
        shown = not baseline and bool(data.positions or self.faint_items)
        self._show("positions", shown, np.empty(0), data.row, baseline_too=True)  # x auto-ranged over the bars

    def _draw_acceptance(self, data: LiveData) -> None:
        t = data.samples.column(0)
        mal, rate = data.samples.column(1), data.samples.column(2)
        self.mal_curve.setData(t, mal, connect="finite")
        self.rate_curve.setData(t, rate, connect="finite")
        shown = not self._baseline(data.row) and bool(np.isfinite(mal).any() or np.isfinite(rate).any())
        self._show("acceptance", shown, t, data.row, baseline_too=True)

    def _draw_throughput(self, data: LiveData) -> None:
        t, tps = data.samples.column(0), data.samples.column(3)
        self.tps_curve.setData(t, tps, connect="finite")
        self._show("throughput", bool(np.isfinite(tps).any()), t, data.row)

    def _draw_latency(self, data: LiveData) -> None:
        idx = data.requests.column(0)
        self.ttft_scatter.setData(idx, data.requests.column(1))
        self.itl_scatter.setData(idx, data.requests.column(2))
        self._show("latency", data.requests.n > 0, idx, data.row, whole=True)

    def _show(self, name: str, shown: bool, x: np.ndarray, row: RunRecord | None, baseline_too: bool = False,
              whole: bool = False) -> None:
        """The chart with its data over x, or its empty state saying why (by the run's row); x grows
        in steps while the run streams and fits the data once it is over."""
        state = self.states[name]
        state.set_empty(None if shown else self._why_empty(row, baseline_too))
        if shown and len(x):
            # Requests finish out of order: their numbers are not sorted.
            growing = not (row and row.status in FINAL)
            state.follow_x(float(np.min(x)), float(np.max(x)), whole, growing)

    def _draw_telemetry(self, data: LiveData) -> None:
        self.gpu_panels(data.gpus)
        readings = data.telemetry
        if readings:
            t0 = readings[0][0]
            for i, (name, s) in enumerate(live_feed.telemetry_series(readings).items()):
                t = np.asarray(s.t) - t0
                for kind, plot, values in (("power", self.power_plot, s.power), ("util", self.util_plot, s.util)):
                    # A hidden panel (no GPUs here) is not drawn; it is when it shows.
                    if plot.isHidden() or np.all(np.isnan(values)):
                        continue
                    curve = self.telemetry_curves.get((kind, name))
                    if curve is None:
                        style = Qt.PenStyle.DashLine if name == "all GPUs" else Qt.PenStyle.SolidLine
                        curve = plot.plot(name=name, pen=pg.mkPen(palette.other(i), width=2, style=style))
                        self.telemetry_curves[(kind, name)] = curve
                    curve.setData(t, np.asarray(values, float), connect="finite")
        span = np.array([0.0, readings[-1][0] - readings[0][0]]) if readings else np.empty(0)
        for kind in ("power", "util"):
            self._show(kind, any(k == kind for k, _ in self.telemetry_curves), span, data.row)

    def show_siblings(self, rows: list[RunRecord]) -> None:
        """The sweep's earlier completed runs (their rows), drawn faintly behind the bars and named
        in their colours under them."""
        for item in self.faint_items:
            self.pos_plot.removeItem(item)
        self.faint_items = []
        named: dict[str, str] = {}
        for row in rows:
            values = row.per_position or ()
            colour = palette.colour(row.method or "", row.n)  # a run without a method: a colour of its own
            faint = pg.mkColor(colour)
            faint.setAlpha(45)
            item = pg.BarGraphItem(x=np.arange(1, len(values) + 1), height=values, width=0.8,
                                   brush=faint, pen=pg.mkPen(None))
            item.setZValue(-1)
            self.pos_plot.addItem(item)
            self.faint_items.append(item)
            named.setdefault(f"{row.method}" + ("" if row.n is None else f" N={row.n}"), colour)
        names = [f'<span style="color:{c}">{html.escape(n)}</span>' for n, c in list(named.items())[:FAINT_NAMED]]
        more = f" and {len(named) - FAINT_NAMED} more" if len(named) > FAINT_NAMED else ""
        self.faint_caption.setText(f"Faint bars: earlier runs of this sweep ({', '.join(names)}{more})"
                                   if named else "")
        self.faint_caption.setVisible(bool(named))
        self.stale.add("positions")

    def colour(self, row: RunRecord) -> None:
        """The run's (method, N) colour, as in Compare, the report and the exports: set once per
        run (a new pen repaints its chart), the legend's swatches repainted with it."""
        key = (row.method or "", row.n)
        if key == self._colour_key:
            return
        self._colour_key = key
        colour = palette.colour(*key)
        self.bars.setOpts(brush=colour, pen=pg.mkPen(colour))
        self.mal_curve.setPen(pg.mkPen(colour, width=2))
        self.tps_curve.setPen(pg.mkPen(colour, width=2))
        # A legend swatch reads its item's pen only when painted; nothing repaints it on a new pen.
        for sample, _ in self.acc_plot.getPlotItem().legend.items:
            sample.update()

    def gpu_panels(self, show: bool) -> None:
        """The GPU power panel, or in its place the no-GPU line with the utilisation panel taking
        the power panel's row (host CPU only)."""
        if show == self._gpu_shown:
            return
        self._gpu_shown = show
        self.power_plot.setVisible(show)
        self.no_gpu.setVisible(not show)
        # Without the power panel, the utilisation panel takes its row.
        self.grid.addWidget(self.util_plot, 2, 1 if show else 0, 1, 1 if show else 2)
        self.util_plot.setTitle("GPU and CPU utilisation" if show else "Host CPU utilisation")
