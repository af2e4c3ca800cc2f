"""The Live page's charts: built once, redrawn only where their data changed, and saying in words
why a chart is empty instead of showing bare 0-1 axes.

A mixin of `app.pages.live.LivePage`: it draws from the page's buffers (samples, requests,
positions, telemetry) and the run row it last read (`run_row`).
"""

from __future__ import annotations

import html
import json

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGraphicsItem

from app.widgets import fast_grid, theme
from app.widgets.charts import right_axis_curve, side_legend
from app.widgets.plot_state import PlotState
from app.widgets.theme import integer_ticks
from workbench.metrics import telemetry
from workbench.report import palette

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
DRAWS = {"positions": ("pos_plot",), "acceptance": ("acc_plot",), "throughput": ("tps_plot",),
         "latency": ("lat_plot",), "telemetry": ("power_plot", "util_plot")}
NO_RUN = "No run shown yet"
WAITING = "No data yet: this chart fills once the run's measurement window starts"
NOTHING = "No data was recorded for this run"
BASELINE = "A baseline drafts nothing: no acceptance to show"
FINAL = ("completed", "partial", "failed", "cancelled")
FAINT_NAMED = 4  # earlier configurations named in the caption under the per-position bars


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
    """The charts half of the Live page."""

    def _build_charts(self) -> None:
        self.stale: set[str] = set(CHARTS)
        self.run_row: dict | None = None
        self._colour_key: tuple | None = None

        self.pos_plot = _plot("Per-position acceptance", "acceptance (0–1)", "draft position", TIPS["positions"])
        integer_ticks(self.pos_plot)
        self.faint_items: list[pg.BarGraphItem] = []
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.55, brush=palette.BASELINE)
        self.pos_plot.addItem(self.bars)
        pi = self.pos_plot.getPlotItem()
        # What the faint bars are: the sweep's earlier runs, named in their colours.
        self.faint_caption = pg.LabelItem("", size="8pt", color="#666666", justify="left")
        pi.layout.addItem(self.faint_caption, 4, 0, 1, 4)

        self.acc_plot = _plot("MAL and acceptance rate", "MAL (tokens / step)", "time in window (s)", TIPS["acceptance"])
        side_legend(self.acc_plot)
        self.mal_curve = self.acc_plot.plot(name="MAL", pen=pg.mkPen(palette.BASELINE, width=2))
        self.rate_view, self.rate_curve = right_axis_curve(
            self.acc_plot, "acceptance rate (0–1)", "acceptance rate",
            pg.mkPen(palette.other(0), width=2, style=Qt.DashLine), (0, 1.05))

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

    # --- what needs drawing ---------------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        return bool(self.stale)

    @dirty.setter
    def dirty(self, value: bool) -> None:
        self.stale = set(CHARTS) if value else set()

    def _reset_charts(self) -> None:
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

    def redraw(self) -> None:
        """Every chart whose data changed, now (visible or not)."""
        for name in CHARTS:
            if name in self.stale:
                self._draw(name)

    def draw_some(self, every: bool) -> None:
        """From the draw timer: nothing while the page is hidden (it catches up when shown); else
        every stale chart, or only the first, so that one event-loop pass paints one chart."""
        if not self.isVisible():
            return
        # In turn from the chart after the last one drawn, so none waits behind a busier one.
        start = getattr(self, "_last_drawn", -1) + 1
        for k in range(len(CHARTS)):
            i = (start + k) % len(CHARTS)
            if CHARTS[i] in self.stale:
                self._draw(CHARTS[i])
                self._last_drawn = i
                if not every:
                    return

    def _draw(self, name: str) -> None:
        self.stale.discard(name)
        getattr(self, f"_draw_{name}")()
        # The new range now, not while painting: a range changed there repaints the chart twice.
        for plot in (getattr(self, attr) for attr in DRAWS[name]):
            for vb in (plot.getPlotItem().getViewBox(), *([self.rate_view] if plot is self.acc_plot else [])):
                vb.updateAutoRange()
                vb.updateMatrix()

    def _why_empty(self, baseline_too: bool = False) -> str:
        row = self.run_row
        if row is None:
            return NO_RUN
        if baseline_too and row.get("method") == "baseline":
            return BASELINE
        return NOTHING if row.get("status") in FINAL else WAITING

    def _baseline(self) -> bool:
        return bool(self.run_row) and self.run_row.get("method") == "baseline"

    # --- each chart -----------------------------------------------------------------------------
    def _draw_positions(self) -> None:
        baseline = self._baseline()
        self.bars.setOpts(x=np.arange(1, len(self.positions) + 1), height=self.positions)
        for item in self.faint_items:
            item.setVisible(not baseline)
        self.faint_caption.setVisible(not baseline and bool(self.faint_items))
        shown = not baseline and bool(self.positions or self.faint_items)
        self._show("positions", shown, np.empty(0), baseline_too=True)  # x auto-ranged over the bars

    def _draw_acceptance(self) -> None:
        t = self.samples.column(0)
        mal, rate = self.samples.column(1), self.samples.column(2)
        self.mal_curve.setData(t, mal, connect="finite")
        self.rate_curve.setData(t, rate, connect="finite")
        shown = not self._baseline() and bool(np.isfinite(mal).any() or np.isfinite(rate).any())
        self._show("acceptance", shown, t, baseline_too=True)

    def _draw_throughput(self) -> None:
        t, tps = self.samples.column(0), self.samples.column(3)
        self.tps_curve.setData(t, tps, connect="finite")
        self._show("throughput", bool(np.isfinite(tps).any()), t)

    def _draw_latency(self) -> None:
        idx = self.requests.column(0)
        self.ttft_scatter.setData(idx, self.requests.column(1))
        self.itl_scatter.setData(idx, self.requests.column(2))
        self._show("latency", self.requests.n > 0, idx, whole=True)

    def _show(self, name: str, shown: bool, x: np.ndarray, baseline_too: bool = False, whole: bool = False) -> None:
        """The chart with its data over x, or its empty state saying why; x grows in steps while
        the run streams and fits the data once it is over."""
        state = self.states[name]
        state.set_empty(None if shown else self._why_empty(baseline_too))
        if shown and len(x):
            # Requests finish out of order: their numbers are not sorted.
            growing = not (self.run_row and self.run_row.get("status") in FINAL)
            state.follow_x(float(np.min(x)), float(np.max(x)), whole, growing)

    def _draw_telemetry(self) -> None:
        self._gpu_panels()
        if self.telemetry:
            t0 = self.telemetry[0][0]
            for i, (name, s) in enumerate(telemetry.series(self.telemetry).items()):
                t = np.asarray(s["t"]) - t0
                for kind, plot, values in (("power", self.power_plot, s["power"]),
                                           ("util", self.util_plot, s["util"])):
                    # A hidden panel (no GPUs here) is not drawn; it is when it shows.
                    if plot.isHidden() or np.all(np.isnan(values)):
                        continue
                    curve = self.telemetry_curves.get((kind, name))
                    if curve is None:
                        dashed = name == "all GPUs"
                        curve = plot.plot(name=name, pen=pg.mkPen(palette.other(i), width=2,
                                                                  style=Qt.DashLine if dashed else Qt.SolidLine))
                        self.telemetry_curves[(kind, name)] = curve
                    curve.setData(t, np.asarray(values, float), connect="finite")
        span = np.array([0.0, self.telemetry[-1][0] - self.telemetry[0][0]]) if self.telemetry else np.empty(0)
        for kind in ("power", "util"):
            self._show(kind, any(k == kind for k, _ in self.telemetry_curves), span)

    def _draw_siblings(self) -> None:
        for item in self.faint_items:
            self.pos_plot.removeItem(item)
        self.faint_items = []
        named: dict[str, str] = {}
        for row in self.feed.siblings() if self.feed else []:
            values = json.loads(row["per_position"])
            colour = palette.colour(row["method"], row["n"])
            faint = pg.mkColor(colour)
            faint.setAlpha(45)
            item = pg.BarGraphItem(x=np.arange(1, len(values) + 1), height=values, width=0.8,
                                   brush=faint, pen=pg.mkPen(None))
            item.setZValue(-1)
            self.pos_plot.addItem(item)
            self.faint_items.append(item)
            named.setdefault(row["method"] + ("" if row["n"] is None else f" N={row['n']}"), colour)
        names = [f'<span style="color:{c}">{html.escape(n)}</span>' for n, c in list(named.items())[:FAINT_NAMED]]
        more = f" and {len(named) - FAINT_NAMED} more" if len(named) > FAINT_NAMED else ""
        self.faint_caption.setText(f"Faint bars: earlier runs of this sweep ({', '.join(names)}{more})"
                                   if named else "")
        self.faint_caption.setVisible(bool(named))
        self.stale.add("positions")

    def _colour(self, row: dict) -> None:
        """The run's (method, N) colour, as in Compare, the report and the exports: set once per
        run (a new pen repaints its chart), the legend's swatches repainted with it."""
        key = (row["method"], row["n"])
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

    def _gpu_panels(self) -> None:
        show = self.host_has_gpus or self.gpu_readings
        if show == getattr(self, "_gpu_shown", None):
            return
        self._gpu_shown = show
        self.power_plot.setVisible(show)
        self.no_gpu.setVisible(not show)
        # Without the power panel, the utilisation panel takes its row.
        self.grid.addWidget(self.util_plot, 2, 1 if show else 0, 1, 1 if show else 2)
        self.util_plot.setTitle("GPU and CPU utilisation" if show else "Host CPU utilisation")
