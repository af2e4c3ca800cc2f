"""How Compare's line charts draw what they are handed: the prompt-length bins from left to right
in numeric order, and a sweep of one N with its baseline in sight and its error bars narrow."""

from __future__ import annotations

import dataclasses
import numpy as np
import pyqtgraph as pg

from app.widgets import charts as chartlib
from helpers.recorded import DEMO_DB, stored_runs
from workbench.usecases import compare_view


def _curves(plot: pg.PlotWidget) -> list[pg.PlotDataItem]:
    return [item for item in plot.getPlotItem().items if isinstance(item, pg.PlotDataItem)]


def test_prompt_length_bins_run_in_numeric_order(qtbot):
    data = compare_view.build(stored_runs(DEMO_DB), DEMO_DB).data
    starts = {r.prompt_tokens_from for r in data.by_prompt_length}
    assert len(starts) > 2 and len({len(str(s)) for s in starts}) > 1  # bins of two and three digits
    plot = chartlib.new_plot("by_prompt_length")
    qtbot.addWidget(plot)
    assert chartlib.draw(plot, "by_prompt_length", data)
    curves = _curves(plot)
    assert curves
    for curve in curves:
        x, _ = curve.getData()
        assert list(x) == sorted(x) and set(x) == starts, (curve.name(), list(x))
    # Each point keeps its own MAL once sorted.
    for curve in curves:
        x, y = curve.getData()
        mal = {r.prompt_tokens_from: r.mal for r in data.by_prompt_length if r.series == curve.name()}
        assert np.allclose(y, [mal[int(v)] for v in x])


def test_throughput_of_one_n_shows_its_baseline_and_narrow_error_bars(qtbot):
    # The demo sweep's baseline and n-gram at N = 2 only, each measured twice (a second repeat 10 %
    # slower), so every point has a 95 % interval.
    rows = [r for r in stored_runs(DEMO_DB) if r.method == "baseline" or (r.method, r.n) == ("ngram", 2)]
    rows += [dataclasses.replace(r, id=r.id + 1000, repeat=2, output_tok_s=r.output_tok_s * 0.9) for r in rows]
    data = compare_view.build(rows, None).data
    assert {r.n for r in data.throughput} == {2} and all(r.tok_s_ci95 for r in data.throughput)
    plot = chartlib.new_plot("throughput")
    qtbot.addWidget(plot)
    plot.resize(1000, 600)
    plot.show()
    qtbot.waitExposed(plot)
    assert chartlib.draw(plot, "throughput", data)
    qtbot.wait(50)  # the view ranges itself on the data when next drawn
    items = plot.getPlotItem().items
    baselines = [c for c in _curves(plot) if (c.name() or "").startswith("baseline")]
    assert len(baselines) == 2  # one per concurrency
    (x_low, x_high), _ = plot.getPlotItem().getViewBox().viewRange()
    for line in baselines:
        x, y = line.getData()
        # A line with length on screen (a line from N = 2 to N = 2 is drawn as nothing at all).
        assert x.max() - x.min() >= 0.25 * (x_high - x_low), (list(x), x_low, x_high)
        assert line.opts["pen"].style() != 0 and np.all(np.isfinite(y))
    bars = [item for item in items if isinstance(item, pg.ErrorBarItem)]
    assert bars
    for bar in bars:
        # Each cap as wide as a marker's neighbourhood, not the plot's width.
        assert bar.opts["beam"] <= 0.2 * (x_high - x_low), (bar.opts["beam"], x_low, x_high)
