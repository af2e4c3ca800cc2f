"""The Live page: a run's acceptance, throughput and latency drawn from the database as it grows.

The page reads the run into its buffers and decides when to draw; its charts are a
`app.pages.live_charts.LiveCharts` it owns, handed those buffers at each draw. How often it reads
and draws, `app.pages.live_pace`."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.models.dbpoll import RunFeed
from app.pages import live_pace
from app.pages.live_charts import NO_GPU, TIPS, LiveCharts, LiveData, Series
from app.pages.live_parts import RunHeadline, SweepBar, server_log
from app.widgets.slots_table import SlotsTable
from workbench import events, store
from workbench.analysis import compare
from workbench.usecases import host_facts
from workbench.usecases.live_feed import SweepClock

__all__ = ["LivePage", "NO_GPU", "Series", "TIPS"]


class LivePage(QWidget):
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db_path: Path | None = None
        self.feed: RunFeed | None = None
        self.run_row: store.RunRecord | None = None  # the run as last read
        self.samples = Series(4)   # t, mal, acceptance rate, output tok/s
        self.requests = Series(3)  # idx, ttft ms, itl ms
        self.positions: list[float] = []
        self.telemetry: list[tuple[Any, ...]] = []
        self.gpu_readings = False  # whether the run shown has GPU readings (recorded on a GPU host)
        self.sweep_total = 0
        self.sweep_done = 0
        self.clock = SweepClock()
        self.starting = ""      # "starting server k of n" until the server answers
        self.host_has_gpus = True
        self.alarm_lines: list[str] = []
        self.adaptive_lines: dict[str, str] = {}

        self.headline = RunHeadline()
        self.sweep_bar = SweepBar()
        self.sweep_bar.stop_button.clicked.connect(self.stop_requested)
        # The parts' labels and buttons under the names the page's methods (and its tests) read them by.
        self.title, self.flag, self.warned, self.alarms = (self.headline.title, self.headline.flag,
                                                           self.headline.warned, self.headline.alarms)
        self.progress, self.stop_button = self.sweep_bar.progress, self.sweep_bar.stop_button
        self.eta, self.pace_note = self.sweep_bar.eta, self.sweep_bar.pace_note
        # An adaptive sweep's reasoning: per context, its latest prediction, then its recommendation.
        self.adaptive = QLabel("")
        self.adaptive.setWordWrap(True)
        self.adaptive.setVisible(False)
        self.slots = SlotsTable()
        self.slots.run_chosen.connect(lambda run: self.db_path and self.show_run(self.db_path, run))
        self.charts = LiveCharts()
        self.pace = live_pace.Pace()
        self.log = server_log()
        layout = QVBoxLayout(self)
        for part in (self.headline, self.sweep_bar, self.charts.no_gpu, self.adaptive, self.slots):
            layout.addWidget(part)
        layout.addLayout(self.charts.grid, 4)
        layout.addWidget(QLabel("Server log"))
        layout.addWidget(self.log, 1)

        self.poll_timer = QTimer(self, interval=live_pace.POLL_MS)
        self.poll_timer.timeout.connect(self._poll_tick)
        self.draw_timer = QTimer(self, interval=live_pace.DRAW_MS)
        self.draw_timer.timeout.connect(lambda: self.draw_some(every=False))
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
        self.run_row = None
        self.charts.reset()
        self.log.clear()
        self.headline.clear_flags()
        self.charts.show_siblings(self.feed.siblings())
        self.poll()
        # Drawn at once: nothing of the previous run stays up until the next draw.
        self.redraw()
        self.poll_timer.start()

    # --- drawing ------------------------------------------------------------------------------
    def _data(self) -> LiveData:
        """What the charts draw: the buffers as read so far, and the run's row."""
        return LiveData(self.samples, self.requests, self.positions, self.telemetry, self.run_row,
                        self.gpus_shown)

    @property
    def gpus_shown(self) -> bool:
        """The GPU panels show on a host with GPUs, or once a run has GPU readings (a remote one)."""
        return bool(self.host_has_gpus or self.gpu_readings)

    def redraw(self) -> None:
        """Every chart whose data changed, now (visible or not)."""
        self.charts.redraw(self._data())

    def draw_some(self, every: bool) -> None:
        """From the draw timer: nothing while the page is hidden (it catches up when shown); else
        every stale chart, or only the first, so that one event-loop pass paints one chart."""
        if self.isVisible():
            self.charts.draw_some(self._data(), every)

    def _poll_tick(self) -> None:
        """From the poll timer: a hidden page reads nothing (it catches up when shown); during a
        measurement the one read a second is drawn straight away, all charts at once."""
        if not self.isVisible():
            return
        self.poll()
        if self.pace.measuring:
            self.draw_some(every=True)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if self.feed is not None:
            self.poll()
            self.redraw()

    def poll(self) -> None:
        if not self.feed:
            return
        new = self.feed.poll()
        # Each chart is redrawn only when its own rows came.
        if new["samples"]:
            self.samples.extend(np.array(new["samples"], dtype=float))
            self.charts.stale.update(("acceptance", "throughput"))
        if new["positions"]:
            last_t = new["positions"][-1][0]
            self.positions = [a or 0.0 for t, _, a in new["positions"] if t == last_t]
            self.charts.stale.add("positions")
        if new["requests"]:
            rows = np.array(new["requests"], dtype=float)
            rows[:, 0] += 1
            self.requests.extend(rows)
            self.charts.stale.add("latency")
        if new.get("telemetry"):
            self.telemetry.extend(new["telemetry"])
            self.gpu_readings = self.gpu_readings or any(r[1] == "gpu" for r in new["telemetry"])
            self.charts.stale.add("telemetry")
        if new["logs"]:
            self.log.appendPlainText("\n".join(line for (line,) in new["logs"][-1000:]))
        row = self.feed.run_row()
        if row:
            before = self.run_row
            if before is None or (row.status, row.method) != (before.status, before.method):
                self.charts.dirty = True  # an empty chart says why by the run's method and state
            self.run_row = row
            self.charts.colour(row)
            self.headline.show_flags(row)
            n = "" if row.n is None else f" N={row.n}"
            figures = ""
            if row.status == "completed":
                mal = f", MAL {row.mal:.2f}" if row.mal else ""
                figures = f" — {row.output_tok_s:.1f} tok/s{mal}"
            elif row.status == "partial":
                figures = (f" — {row.output_tok_s:.1f} tok/s from an incomplete window: {row.error} "
                           "(left out of speedups)")
            elif row.status == "failed":
                figures = f" — {row.error}"
            state = self.starting if self.starting and row.status == "pending" else str(row.status)
            # A what-if run's acceptance is imposed, not measured: its title says so and from where.
            what_if = f" · <b>{html.escape(compare.marker(row))}</b>" if row.what_if else ""
            self.title.setText(f"<b>Run {row.id}</b>: {row.method}{n} · {row.workload} · "
                               f"concurrency {row.concurrency} · <i>{html.escape(state)}</i>{what_if}{figures}")
            if row.status in ("completed", "partial", "failed", "cancelled") and not any(new.values()):
                self.poll_timer.stop()

    def set_host_gpus(self, found: tuple[str, list[host_facts.Gpu]]) -> None:
        """GPU detection's answer ('cuda' | 'rocm' | 'none', GPUs): without GPUs, the power panel
        gives way to one line, unless the run shown carries GPU readings (recorded elsewhere)."""
        self.host_has_gpus = found[0] != "none" or bool(found[1])
        self.charts.gpu_panels(self.gpus_shown)

    # --- the sweep ------------------------------------------------------------------------------
    def on_event(self, event: events.Event) -> None:
        self.slots.on_event(event)
        if isinstance(event, events.SweepStarted):
            # What this model's servers took here before: an ETA from the first server on.
            self.clock = SweepClock(known=host_facts.cpu_measured())
        self.clock.feed(event)
        if self.pace.on_event(event):
            self._set_pace()
        if isinstance(event, events.SweepStarted):
            self.sweep_total = event.runs
            self.sweep_done = event.runs - event.pending
            self.progress.setRange(0, self.sweep_total)
            self.progress.setValue(self.sweep_done)
            self.stop_button.setEnabled(True)
            self._show_adaptive({})
            self._show_alarms([])
        elif isinstance(event, events.ServerStarting):
            self.starting = (f"starting server {event.index} of {event.servers}…" if event.index and event.servers
                             else "starting vLLM…")
            if self.db_path is not None and event.run:
                self.show_run(self.db_path, event.run)
            self.eta.setText(" · ".join(filter(None, [self.starting, self.clock.text()])))
        elif isinstance(event, events.ServerReady):
            self.eta.setText(f"vLLM ready in {event.seconds:.0f} s")
        elif isinstance(event, events.RunStarted) and self.db_path is not None:
            self.starting = ""
            self.show_run(self.db_path, event.run)
            self._update_eta()
        elif isinstance(event, (events.RunFinished, events.RunFailed)):
            self.sweep_done += 1
            self.progress.setValue(self.sweep_done)
            self._update_eta()
        elif isinstance(event, events.SweepFinished):
            self.stop_button.setEnabled(False)
            self.eta.setText("cancelled" if event.cancelled else f"sweep failed: {event.error}" if event.error
                             else "sweep finished")
        elif isinstance(event, events.Alarm):
            self._show_alarms(self.alarm_lines + [f"run {event.run}: {event.message}"])
        elif isinstance(event, events.AdaptiveStarted):
            self._show_adaptive({label: f"{label}: measuring N = {', '.join(map(str, ns))} first"
                                 for label, ns in event.probes.items()})
        elif isinstance(event, events.Prediction):
            self._show_adaptive({**self.adaptive_lines, event.context: event.summary()})
        elif isinstance(event, events.Recommendation):
            self._show_adaptive({**self.adaptive_lines, event.context: "recommended: " + event.message})

    def _set_pace(self) -> None:
        """During a measurement: one read and one draw a second, from the poll timer, and a line
        saying so; between runs: four reads a second and a chart redrawn every 66 ms."""
        measuring = self.pace.measuring
        self.poll_timer.setInterval(self.pace.poll_ms)
        if measuring:
            self.draw_timer.stop()
        else:
            self.draw_timer.start()
        self.pace_note.setVisible(measuring)

    def _show_adaptive(self, lines: dict[str, str]) -> None:
        self.adaptive_lines = lines
        self.adaptive.setText("<b>Adaptive N</b><br>" + "<br>".join(html.escape(v) for v in lines.values()))
        self.adaptive.setVisible(bool(lines))

    def _show_alarms(self, lines: list[str]) -> None:
        self.alarm_lines = lines
        latest = lines[-3:]  # the newest few; the tooltip and History keep every one
        more = f" (and {len(lines) - len(latest)} earlier)" if len(lines) > len(latest) else ""
        self.alarms.setText("<b>Alarm</b> " + "<br>".join(html.escape(x) for x in latest) + more if lines else "")
        self.alarms.setToolTip("\n".join(lines) or self.alarms.toolTip())
        self.alarms.setVisible(bool(lines))

    def _update_eta(self) -> None:
        # Server starts, not runs, take most of a sweep: the clock times the two apart.
        self.eta.setText(f"run {min(self.sweep_done + 1, self.sweep_total)} of {self.sweep_total} · "
                         f"{self.clock.text()}")

    def follow(self, db_path: Path) -> None:
        self.db_path = db_path
