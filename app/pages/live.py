"""The Live page: a run's acceptance, throughput and latency drawn from the database as it grows."""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QGridLayout, QHBoxLayout, QLabel, QPlainTextEdit, QProgressBar, QPushButton, QVBoxLayout, QWidget,
)

from app.widgets import theme
from app.widgets.slots_table import SlotsTable
from app.widgets.charts import right_axis_curve, side_legend
from app.widgets.theme import integer_ticks
from app.models.dbpoll import RunFeed
from workbench import events
from workbench.analysis import compare
from workbench.metrics import telemetry
from workbench.report import palette

NO_GPU = ("No GPU on this host: GPU power and utilisation are not measured (host CPU utilisation is "
          "drawn below).")

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
    w.getPlotItem().setClipToView(True)
    # Long histories are drawn at screen resolution; peaks are kept so spikes stay visible.
    w.getPlotItem().setDownsampling(auto=True, mode="peak")
    for side in ("left", "bottom"):
        w.getAxis(side).enableAutoSIPrefix(False)  # seconds and watts as they are, never "(x0.001)"
    return w


class LivePage(QWidget):
    stop_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.db_path: Path | None = None
        self.feed: RunFeed | None = None
        self.dirty = False
        self.samples = Series(4)   # t, mal, acceptance rate, output tok/s
        self.requests = Series(3)  # idx, ttft ms, itl ms
        self.positions: list[float] = []
        self.sweep_total = 0
        self.sweep_done = 0
        self.sweep_started: float | None = None
        self.starting = ""      # "starting server k of n" until the server answers
        self.host_has_gpus = True

        self.title = QLabel("No run selected: start a sweep on the Experiment page, or open a run from History.")
        self.title.setWordWrap(True)
        # A run that lost requests, or failed, said in one line that stands out.
        self.flag = QLabel("")
        self.flag.setWordWrap(True)
        self.flag.setStyleSheet("color: #b00020; font-weight: bold")
        self.flag.setVisible(False)
        self.no_gpu = QLabel(NO_GPU)
        self.no_gpu.setVisible(False)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m runs")
        self.progress.setToolTip("Runs of the sweep done (completed or failed) out of all its runs")
        self.eta = QLabel("")
        # An adaptive sweep's reasoning: per context, its latest prediction, then its recommendation.
        self.adaptive = QLabel("")
        self.adaptive.setWordWrap(True)
        self.adaptive.setVisible(False)
        self.adaptive_lines: dict[str, str] = {}
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the sweep: every server is shut down and the runs in flight are marked "
                                    "cancelled (Ctrl+.)")
        self.stop_button.setShortcut("Ctrl+.")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.stop_requested)
        self.slots = SlotsTable()
        self.slots.run_chosen.connect(lambda run: self.db_path and self.show_run(self.db_path, run))

        self.pos_plot = _plot("Per-position acceptance", "acceptance (0–1)", "draft position", TIPS["positions"])
        self.pos_plot.setYRange(0, 1.05)
        integer_ticks(self.pos_plot)
        self.faint_items: list[pg.BarGraphItem] = []
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.55, brush=palette.BASELINE)
        self.pos_plot.addItem(self.bars)

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
        self.util_plot.setYRange(0, 105)
        self.telemetry: list[tuple] = []
        self.gpu_readings = False  # whether the run shown has GPU readings (recorded on a GPU host)
        self.telemetry_curves: dict[tuple[str, str], pg.PlotDataItem] = {}

        self.log = QPlainTextEdit(readOnly=True)
        self.log.setMaximumBlockCount(1000)
        self.log.setToolTip("The vLLM server's output for this run")
        self.log.setFont(theme.mono())

        top = QHBoxLayout()
        top.addWidget(self.progress, 1)
        top.addWidget(self.eta)
        top.addWidget(self.stop_button)
        self.grid = grid = QGridLayout()
        grid.addWidget(self.pos_plot, 0, 0)
        grid.addWidget(self.acc_plot, 0, 1)
        grid.addWidget(self.tps_plot, 1, 0)
        grid.addWidget(self.lat_plot, 1, 1)
        grid.addWidget(self.power_plot, 2, 0)
        grid.addWidget(self.util_plot, 2, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.flag)
        layout.addLayout(top)
        layout.addWidget(self.no_gpu)
        layout.addWidget(self.adaptive)
        layout.addWidget(self.slots)
        layout.addLayout(grid, 4)
        layout.addWidget(QLabel("Server log"))
        layout.addWidget(self.log, 1)

        self.poll_timer = QTimer(self, interval=250)
        self.poll_timer.timeout.connect(self.poll)
        self.draw_timer = QTimer(self, interval=66)  # ~15 Hz
        self.draw_timer.timeout.connect(self.redraw)
        self.draw_timer.start()

    # --- what is shown ----------------------------------------------------------------------
    def show_run(self, db_path: Path, run_id: int) -> None:
        if self.feed:
            self.feed.close()
        self.db_path = db_path
        self.feed = RunFeed(db_path, run_id)
        self.samples.clear()
        self.requests.clear()
        self.positions = []
        self.telemetry = []
        self.gpu_readings = False
        for (kind, _), curve in self.telemetry_curves.items():
            (self.power_plot if kind == "power" else self.util_plot).removeItem(curve)
        self.telemetry_curves = {}
        for plot in (self.power_plot, self.util_plot):
            plot.getPlotItem().legend.clear()
        self.log.clear()
        self.flag.setVisible(False)
        self._draw_siblings()
        self.dirty = True  # the previous run's curves and bars are cleared at the next draw
        self.poll()
        self.poll_timer.start()

    def _draw_siblings(self) -> None:
        for item in self.faint_items:
            self.pos_plot.removeItem(item)
        self.faint_items = []
        for i, row in enumerate(self.feed.siblings() if self.feed else []):
            values = json.loads(row["per_position"])
            faint = pg.mkColor(palette.colour(row["method"], row["n"]))
            faint.setAlpha(45)
            item = pg.BarGraphItem(x=np.arange(1, len(values) + 1), height=values, width=0.8,
                                   brush=faint, pen=pg.mkPen(None))
            item.setZValue(-1)
            self.pos_plot.addItem(item)
            self.faint_items.append(item)

    def poll(self) -> None:
        if not self.feed:
            return
        new = self.feed.poll()
        if new["samples"]:
            self.samples.extend(np.array(new["samples"], dtype=float))
        if new["positions"]:
            last_t = new["positions"][-1][0]
            self.positions = [a or 0.0 for t, _, a in new["positions"] if t == last_t]
        if new["requests"]:
            rows = np.array(new["requests"], dtype=float)
            rows[:, 0] += 1
            self.requests.extend(rows)
        if new.get("telemetry"):
            self.telemetry.extend(new["telemetry"])
            self.gpu_readings = self.gpu_readings or any(r[1] == "gpu" for r in new["telemetry"])
        if new["logs"]:
            self.log.appendPlainText("\n".join(line for (line,) in new["logs"][-1000:]))
        row = self.feed.run_row()
        if row:
            self._colour(row)
            self._flag(row)
            n = "" if row["n"] is None else f" N={row['n']}"
            figures = ""
            if row["status"] == "completed":
                mal = f", MAL {row['mal']:.2f}" if row["mal"] else ""
                figures = f" — {row['output_tok_s']:.1f} tok/s{mal}"
            elif row["status"] == "partial":
                figures = (f" — {row['output_tok_s']:.1f} tok/s from an incomplete window: {row['error']} "
                           "(left out of speedups)")
            elif row["status"] == "failed":
                figures = f" — {row['error']}"
            state = self.starting if self.starting and row["status"] == "pending" else row["status"]
            # A what-if run's acceptance is imposed, not measured: its title says so and from where.
            what_if = f" · <b>{html.escape(compare.marker(row))}</b>" if compare.is_what_if(row) else ""
            self.title.setText(f"<b>Run {row['id']}</b>: {row['method']}{n} · {row['workload']} · "
                               f"concurrency {row['concurrency']} · <i>{html.escape(state)}</i>{what_if}{figures}")
            if row["status"] in ("completed", "partial", "failed", "cancelled") and not any(new.values()):
                self.poll_timer.stop()
        if any(new.values()):
            self.dirty = True

    def _colour(self, row: dict) -> None:
        """The run's (method, N) colour, as in Compare, the report and the exports."""
        colour = palette.colour(row["method"], row["n"])
        self.bars.setOpts(brush=colour, pen=pg.mkPen(colour))
        self.mal_curve.setPen(pg.mkPen(colour, width=2))
        self.tps_curve.setPen(pg.mkPen(colour, width=2))

    def _flag(self, row: dict) -> None:
        lost = row.get("requests_failed") or 0
        if row["status"] == "failed":
            text = f"Run {row['id']} failed: {row['error'] or 'see the server log'}"
        elif row["status"] == "partial" or lost:
            sent = (row.get("requests_ok") or 0) + lost
            text = (f"Run {row['id']} is partial: {lost} of {sent} requests failed "
                    f"({row['error'] or 'see the server log'}); it is left out of speedups")
        else:
            text = ""
        self.flag.setText(text)
        self.flag.setVisible(bool(text))

    def set_host_gpus(self, found: tuple) -> None:
        """GPU detection's answer ('cuda' | 'rocm' | 'none', GPUs): without GPUs, the power panel
        gives way to one line, unless the run shown carries GPU readings (recorded elsewhere)."""
        self.host_has_gpus = found[0] != "none" or bool(found[1])
        self._gpu_panels()

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

    def redraw(self) -> None:
        if not self.dirty:
            return
        self.dirty = False
        t = self.samples.column(0)
        self.mal_curve.setData(t, self.samples.column(1), connect="finite")
        self.rate_curve.setData(t, self.samples.column(2), connect="finite")
        self.tps_curve.setData(t, self.samples.column(3), connect="finite")
        self.bars.setOpts(x=np.arange(1, len(self.positions) + 1), height=self.positions)
        self.ttft_scatter.setData(self.requests.column(0), self.requests.column(1))
        self.itl_scatter.setData(self.requests.column(0), self.requests.column(2))
        self._draw_telemetry()

    def _draw_telemetry(self) -> None:
        self._gpu_panels()
        if not self.telemetry:
            return
        t0 = self.telemetry[0][0]
        for i, (name, s) in enumerate(telemetry.series(self.telemetry).items()):
            t = np.asarray(s["t"]) - t0
            for kind, plot, values in (("power", self.power_plot, s["power"]), ("util", self.util_plot, s["util"])):
                if np.all(np.isnan(values)):
                    continue
                curve = self.telemetry_curves.get((kind, name))
                if curve is None:
                    dashed = name == "all GPUs"
                    curve = plot.plot(name=name, pen=pg.mkPen(palette.other(i), width=2,
                                                              style=Qt.DashLine if dashed else Qt.SolidLine))
                    self.telemetry_curves[(kind, name)] = curve
                curve.setData(t, np.asarray(values, float), connect="finite")

    # --- the sweep ------------------------------------------------------------------------------
    def on_event(self, event: events.Event) -> None:
        self.slots.on_event(event)
        if isinstance(event, events.SweepStarted):
            self.sweep_total = event.runs
            self.sweep_done = event.runs - event.pending
            self.sweep_started = time.time()
            self._done_at_start = self.sweep_done
            self.progress.setRange(0, self.sweep_total)
            self.progress.setValue(self.sweep_done)
            self.stop_button.setEnabled(True)
            self._show_adaptive({})
        elif isinstance(event, events.ServerStarting):
            self.starting = (f"starting server {event.index} of {event.servers}…" if event.index and event.servers
                             else "starting vLLM…")
            if self.db_path is not None and event.run:
                self.show_run(self.db_path, event.run)
            self.eta.setText(self.starting)
        elif isinstance(event, events.ServerReady):
            self.eta.setText(f"vLLM ready in {event.seconds:.0f} s")
        elif isinstance(event, events.RunStarted) and self.db_path is not None:
            self.starting = ""
            self.show_run(self.db_path, event.run)
            self.eta.setText(f"run {event.index} of {event.total}")
            self._update_eta()
        elif isinstance(event, (events.RunFinished, events.RunFailed)):
            self.sweep_done += 1
            self.progress.setValue(self.sweep_done)
            self._update_eta()
        elif isinstance(event, events.SweepFinished):
            self.stop_button.setEnabled(False)
            self.eta.setText("cancelled" if event.cancelled else "sweep finished")
        elif isinstance(event, events.AdaptiveStarted):
            self._show_adaptive({label: f"{label}: measuring N = {', '.join(map(str, ns))} first"
                                 for label, ns in event.probes.items()})
        elif isinstance(event, events.Prediction):
            self._show_adaptive({**self.adaptive_lines, event.context: event.summary()})
        elif isinstance(event, events.Recommendation):
            self._show_adaptive({**self.adaptive_lines, event.context: "recommended: " + event.message})

    def _show_adaptive(self, lines: dict[str, str]) -> None:
        self.adaptive_lines = lines
        self.adaptive.setText("<b>Adaptive N</b><br>" + "<br>".join(html.escape(v) for v in lines.values()))
        self.adaptive.setVisible(bool(lines))

    def _update_eta(self) -> None:
        done_here = self.sweep_done - getattr(self, "_done_at_start", 0)
        if not self.sweep_started or done_here <= 0:
            return
        per_run = (time.time() - self.sweep_started) / done_here
        left = per_run * (self.sweep_total - self.sweep_done)
        self.eta.setText(f"run {min(self.sweep_done + 1, self.sweep_total)} of {self.sweep_total} · "
                         f"ETA {int(left // 60)} min {int(left % 60):02d} s")

    def follow(self, db_path: Path) -> None:
        self.db_path = db_path
