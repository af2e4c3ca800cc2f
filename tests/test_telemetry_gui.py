"""GPU telemetry in the Live and Compare pages, drawn from the real two-GPU (TP=2) run's database
committed under docs/gpu/: every GPU separately and their sum."""

from pathlib import Path

import pyqtgraph as pg

from app.pages.compare_page import ComparePage
from app.pages.live import LivePage
from workbench import store
from workbench.analysis import series
from workbench.usecases import compare_view

DB = Path(__file__).resolve().parent.parent / "docs" / "gpu" / "h200x2-tp2.sqlite"


def test_gpu_data_per_gpu_and_summed():
    db = store.open_db(DB, readonly=True)
    rows = series.gpu_bars(db, [1, 3])
    assert [(r.run, r.gpu) for r in rows] == [(1, "GPU 0"), (1, "GPU 1"), (1, "all GPUs"),
                                              (3, "GPU 0"), (3, "GPU 1"), (3, "all GPUs")]
    for run in (1, 3):
        gpu0, gpu1, total = (r for r in rows if r.run == run)
        assert total.power_w == gpu0.power_w + gpu1.power_w
        assert 100 < gpu0.power_w < 700 and 0 <= gpu0.util_pct <= 100
        # The runner's own mean power for the run (its energy / window) agrees with the readings.
        assert abs(total.power_w - db["runs"].get(run)["power_mean_w"]) / total.power_w < 0.1


def test_compare_page_draws_energy_and_per_gpu_power(qtbot):
    page = ComparePage()
    qtbot.addWidget(page)
    rows = store.runs(store.open_db(DB, readonly=True))
    page.set_runs(rows, DB)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    bars = [i for i in page.plots["gpus"].getPlotItem().items if isinstance(i, pg.BarGraphItem)]
    assert len(bars) == 3  # GPU 0, GPU 1, all GPUs
    legend = [label.text for _, label in page.plots["gpus"].getPlotItem().legend.items]
    assert legend == ["GPU 0", "GPU 1", "all GPUs"]
    energy = page.data.energy
    assert {(r.series, r.n) for r in energy} == {("ngram · builtin · c=1", 4), ("ngram · builtin · c=8", 4),
                                                ("draft_model · builtin · c=1", 3),
                                                ("draft_model · builtin · c=8", 3)}
    by = {(r.series, r.n): r for r in energy}
    assert by[("ngram · builtin · c=1", 4)].baseline_joules_per_token == rows[0].joules_per_token
    data = compare_view.build(rows, DB).data
    assert data.gpus == page.data.gpus


def test_live_page_draws_each_gpu_and_the_sum(qtbot):
    page = LivePage()
    qtbot.addWidget(page)
    page.show_run(DB, 3)
    page.poll()
    page.charts.dirty = True
    page.redraw()
    names = {name for (kind, name) in page.charts.telemetry_curves if kind == "power"}
    assert names == {"GPU 0", "GPU 1", "all GPUs"}
    assert {name for (kind, name) in page.charts.telemetry_curves if kind == "util"} == {"GPU 0", "GPU 1", "host CPU"}
    x, y = page.charts.telemetry_curves[("power", "all GPUs")].getData()
    x0, y0 = page.charts.telemetry_curves[("power", "GPU 0")].getData()
    x1, y1 = page.charts.telemetry_curves[("power", "GPU 1")].getData()
    assert len(y) == len(y0) == len(y1) > 30 and abs(y[-1] - (y0[-1] + y1[-1])) < 1e-9
