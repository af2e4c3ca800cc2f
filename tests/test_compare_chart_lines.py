"""How Compare's line charts draw what they are handed: the prompt-length bins from left to right
in numeric order."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from app.widgets import charts as chartlib
from helpers.recorded import DEMO_DB, stored_runs
from workbench.usecases import compare_view


def _curves(plot: pg.PlotWidget) -> list[pg.PlotDataItem]:
    return [item for item in plot.getPlotItem().items if isinstance(item, pg.PlotDataItem)]


def test_prompt_length_bins_run_in_numeric_order(qtbot):
    data = compare_view.build(stored_runs(DEMO_DB), DEMO_DB).data
    starts = {r["prompt_tokens_from"] for r in data["by_prompt_length"]}
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
        mal = {r["prompt_tokens_from"]: r["mal"] for r in data["by_prompt_length"] if r["series"] == curve.name()}
        assert np.allclose(y, [mal[int(v)] for v in x])
