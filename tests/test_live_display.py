"""The Live page while a sweep measures and between runs: it draws once a second during a
measurement window and says so, skips work while hidden, says in words why a chart is empty
(no bare 0-1 axes; a baseline's acceptance), starts each run from fresh ranges, names its faint
bars, and keeps each legend swatch in its line's colour."""

from __future__ import annotations

import json

import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from app.pages import live_charts, live_pace
from app.pages.live import LivePage

from workbench import events, store
from workbench.report import palette

BASELINE_RUN, NGRAM_RUN, OTHER_NGRAM_RUN, DRAFT_RUN = 2, 6, 5, 7


def _pending_run(db_path) -> int:
    """A run of the sweep registered and not started: no rows yet."""
    db = store.open_db(db_path)
    row = {k: v for k, v in store.run(db, NGRAM_RUN).as_dict().items() if k != "id"}
    row.update(key="next", seq=99, status="pending", output_tok_s=None, mal=None, per_position=None)
    run = store.add_imported_run(db, row)
    store.close(db)
    return run


def _axes_shown(plot: pg.PlotWidget) -> bool:
    return plot.getPlotItem().getAxis("left").isVisible() and plot.getPlotItem().getAxis("bottom").isVisible()


def test_drawing_slows_to_once_a_second_during_a_measurement_window_and_says_so(live, demo_db):
    live.follow(demo_db)
    assert not live.pace_note.isVisible() and live.draw_timer.isActive()
    assert live.poll_timer.interval() == live_pace.POLL_MS
    live.on_event(events.SweepStarted(experiment=1, db=str(demo_db), runs=10, pending=10))
    live.on_event(events.RunStarted(run=NGRAM_RUN, label="ngram N=4", index=6, total=10))
    assert live.pace.measuring
    assert live.pace_note.isVisible() and live.pace_note.text() == live_pace.NOTE
    assert "1 Hz" in live.pace_note.text() and "5 %" in live.pace_note.text()
    # One read a second, drawn in the same tick: no draw timer of its own.
    assert live.poll_timer.interval() == 1000 and not live.draw_timer.isActive()
    live.charts.stale = set(live_charts.CHARTS)
    live._poll_tick()
    assert not live.charts.stale  # rows that came in since the last tick, drawn at once
    live.on_event(events.RunFinished(run=NGRAM_RUN, label="ngram N=4", output_tok_s=1.0, mal=2.0,
                                     acceptance_rate=0.5))
    assert not live.pace.measuring and not live.pace_note.isVisible()
    assert live.poll_timer.interval() == live_pace.POLL_MS and live.draw_timer.isActive()


def test_a_parallel_sweep_measures_until_its_last_run_in_flight_ends(live):
    for run in (1, 2):
        live.on_event(events.RunStarted(run=run, label="x", index=run, total=2))
    live.on_event(events.RunFailed(run=1, error="partial: 1 of 2 requests failed"))
    assert live.pace.measuring and live.pace_note.isVisible()
    live.on_event(events.SweepFinished(cancelled=True))
    assert not live.pace.measuring and not live.pace_note.isVisible()


def test_a_hidden_page_neither_reads_nor_draws_and_catches_up_when_shown(live, demo_db, monkeypatch):
    live.show_run(demo_db, NGRAM_RUN)
    reads = []
    real = live.feed.poll
    monkeypatch.setattr(live.feed, "poll", lambda: reads.append(1) or real())
    live.hide()
    live.charts.stale = {"throughput"}
    live._poll_tick()
    live.draw_some(every=True)
    assert reads == [] and live.charts.stale == {"throughput"}
    live.show()
    assert reads and not live.charts.stale


def test_one_chart_is_drawn_per_tick_between_runs_each_in_turn(live, demo_db):
    live.show_run(demo_db, NGRAM_RUN)
    drawn = []
    for _ in range(len(live_charts.CHARTS)):
        # Rows for every chart come faster than the ticks: each is still drawn in its turn.
        live.charts.stale = set(live_charts.CHARTS)
        live.draw_some(every=False)
        drawn += [name for name in live_charts.CHARTS if name not in live.charts.stale]
    assert sorted(drawn) == sorted(live_charts.CHARTS)


def test_no_bare_axes_before_any_data_says_why_instead(live, demo_db):
    for name, state in live.charts.states.items():
        assert state.shown == live_charts.NO_RUN, name
        assert state.text.isVisible() and not _axes_shown(state.plot), name
    live.show_run(demo_db, _pending_run(demo_db))
    for name in ("acceptance", "throughput", "latency"):
        assert live.charts.states[name].shown == live_charts.WAITING, name
        assert not _axes_shown(live.charts.states[name].plot)
    # The per-position chart has the sweep's earlier runs to show meanwhile, faintly, on its axes.
    charts = live.charts
    assert charts.states["positions"].shown is None and charts.faint_items and charts.faint_caption.isVisible()


def test_a_baseline_run_says_it_has_no_acceptance(live, demo_db):
    live.show_run(demo_db, BASELINE_RUN)
    for name in ("positions", "acceptance"):
        state = live.charts.states[name]
        assert state.shown == live_charts.BASELINE == "A baseline drafts nothing: no acceptance to show"
        assert state.text.isVisible() and "baseline drafts nothing" in state.text.textItem.toPlainText()
        assert not _axes_shown(state.plot)
    assert not any(item.isVisible() for item in live.charts.faint_items) and not live.charts.faint_caption.isVisible()
    # Its throughput and latency are drawn as for any run.
    assert live.charts.states["throughput"].shown is None and _axes_shown(live.charts.tps_plot)
    live.show_run(demo_db, NGRAM_RUN)
    assert live.charts.states["acceptance"].shown is None and _axes_shown(live.charts.acc_plot)


def test_the_next_server_starts_from_fresh_ranges(live, demo_db):
    live.follow(demo_db)
    live.show_run(demo_db, NGRAM_RUN)
    vb = live.charts.tps_plot.getPlotItem().getViewBox()
    t = live.samples.column(0)
    (left, right), _ = vb.viewRange()
    assert left <= t.min() and t.max() <= right
    # The user zooms far off the data.
    vb.setXRange(500, 600, padding=0)
    vb.setYRange(1000, 2000, padding=0)
    vb.sigRangeChangedManually.emit([True, True])
    assert not live.charts.states["throughput"].following
    live.on_event(events.ServerStarting(run=_pending_run(demo_db), command="vllm serve ...", kind="local",
                                        index=3, servers=5))
    assert live.charts.states["throughput"].shown == live_charts.WAITING
    # Its first run's data, drawn over a range of its own: neither the zoom nor the last run's.
    live.show_run(demo_db, OTHER_NGRAM_RUN)
    state = live.charts.states["throughput"]
    assert state.following and vb.autoRangeEnabled()[1]
    (left, right), (bottom, top) = vb.viewRange()
    t, tps = live.samples.column(0), live.samples.column(3)
    assert left <= t.min() and t.max() <= right and right < 500
    assert bottom <= tps.min() and tps.max() <= top < 1000


def test_faint_bars_of_earlier_runs_are_named(live, demo_db):
    live.show_run(demo_db, NGRAM_RUN)
    assert live.charts.faint_items and live.charts.faint_caption.isVisible()
    text = live.charts.faint_caption.text
    assert "Faint bars: earlier runs of this sweep" in text and "ngram N=2" in text and "draft_model N=1" in text
    assert palette.colour("ngram", 2) in text  # each named in its own colour


def _swatch_pixels(page: LivePage, plot: pg.PlotWidget, label: str) -> set[str]:
    """The colours on screen (the window's backing store, not a fresh render) where a legend
    entry's line swatch is drawn."""
    image = QApplication.primaryScreen().grabWindow(page.winId()).toImage()
    for sample, text in plot.getPlotItem().legend.items:
        if text.text == label:
            rect = plot.mapFromScene(sample.sceneBoundingRect()).boundingRect()
            origin = plot.viewport().mapTo(page, rect.topLeft())
            return {QColor(image.pixel(origin.x() + dx, origin.y() + dy)).name()
                    for dx in range(2, 18) for dy in (10, 11, 12)}
    raise AssertionError(f"no legend entry {label!r}")


def test_the_mal_legend_swatch_is_drawn_in_the_line_colour(live, demo_db, qtbot):
    live.show_run(demo_db, NGRAM_RUN)
    qtbot.wait(200)  # painted in the first run's colour
    live.show_run(demo_db, DRAFT_RUN)  # then the next run's: the swatch follows the pen
    qtbot.wait(200)
    pen = live.charts.mal_curve.opts["pen"].color().name()
    assert pen == palette.colour("draft_model", 1) != palette.colour("ngram", 4)
    shown = _swatch_pixels(live, live.charts.acc_plot, "MAL")
    assert pen in shown and palette.colour("ngram", 4) not in shown


def test_a_run_the_app_may_have_slowed_carries_its_warning(live, demo_db):
    warning = "the Draftbench app used 12.0 % of one CPU core during the window (more than 5 %)"
    db = store.open_db(demo_db)
    store.Recorder(db).run_completed(NGRAM_RUN, {"warnings": json.dumps([warning]), "app_cpu_s": 1.2})
    store.close(db)
    live.show_run(demo_db, NGRAM_RUN)
    assert live.warned.isVisible() and warning in live.warned.text()
    live.show_run(demo_db, OTHER_NGRAM_RUN)
    assert not live.warned.isVisible()
