"""The Compare page says no more than it measured: with one run per configuration no chart draws
an error bar, and "All figures" lists every configuration, the best N of each method in bold."""

from __future__ import annotations

import dataclasses
import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.pages.compare_page import ALL_COLUMNS, ComparePage
from workbench import store


def _error_bars(page) -> list:
    return [item for plot in page.findChildren(pg.PlotWidget) for item in plot.getPlotItem().items
            if isinstance(item, pg.ErrorBarItem)]


def test_one_repeat_draws_no_error_bar_and_all_figures_lists_every_n(qtbot, recorded_db):
    db = store.open_db(recorded_db, readonly=True)
    rows = store.runs(db)
    store.close(db)
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, recorded_db)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    assert {r.repeat for r in rows} == {1}
    assert _error_bars(page) == []
    # Every speculative configuration is a row of All figures (not only each method's best N).
    spec = {(r.method, r.n, r.concurrency) for r in rows if r.method != "baseline"}
    model = page.table_model
    n_col = [key for key, _, _ in ALL_COLUMNS].index("n")
    shown = {(model.data(model.index(i, [k for k, _, _ in ALL_COLUMNS].index("method"))),
              int(model.data(model.index(i, n_col))),
              int(model.data(model.index(i, [k for k, _, _ in ALL_COLUMNS].index("concurrency")))))
             for i in range(model.rowCount())}
    assert shown == spec and model.rowCount() == len(spec) > 4
    bold = [model.data(model.index(i, 0), Qt.FontRole) for i in range(model.rowCount())]
    best = sum(1 for f in bold if f is not None and f.bold())
    assert best == len({(m, c) for m, _, c in spec})  # one best N per method and concurrency


def test_repeats_draw_their_intervals(qtbot, recorded_db):
    """The same page with each run counted twice (a second repeat a little slower) draws bars."""
    db = store.open_db(recorded_db, readonly=True)
    rows = store.runs(db)
    store.close(db)
    twice = rows + [dataclasses.replace(r, id=r.id + 1000, key=r.key + "b", repeat=2,
                     output_tok_s=r.output_tok_s * 0.97) for r in rows]
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(twice, recorded_db)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    assert _error_bars(page)
