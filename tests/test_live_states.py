"""The Live page between and after runs, from stored sweeps: while the next server starts it says
which of the sweep's servers it is and shows nothing of the previous run; a partial or failed run
is flagged; on a host without GPUs the GPU power panel gives way to one line. And a method the
vLLM environment cannot run is marked unavailable in the method list, with how to install it."""

from __future__ import annotations

import numpy as np

from app.pages.live import NO_GPU
from app.widgets.methods_table import MethodsTable
from helpers.recorded import GPU_DB, ROOT, copy_db
from workbench import events, store


def test_starting_the_next_server_clears_the_last_run(live, demo_db):
    live.follow(demo_db)
    live.on_event(events.SweepStarted(experiment=1, db=str(demo_db), runs=10, pending=10))
    live.on_event(events.RunStarted(run=3, label="ngram N=2", index=3, total=10))
    live.poll()
    live.redraw()
    assert len(live.charts.bars.opts["height"]) == 2 and live.samples.n > 0
    # The next server's first run, registered and not started: no figures yet.
    db = store.open_db(demo_db)
    again = {k: v for k, v in store.run(db, 5).as_dict().items() if k != "id"}
    again.update(key="next", seq=99, status="pending", output_tok_s=None, mal=None, per_position=None)
    pending = store.add_imported_run(db, again)
    store.close(db)
    live.on_event(events.ServerStarting(run=pending, command="vllm serve ...", kind="local", index=3, servers=5))
    live.redraw()
    assert "starting server 3 of 5" in live.title.text() and "starting server 3 of 5" in live.eta.text()
    assert f"Run {pending}" in live.title.text() and "ngram N=4" in live.title.text()
    assert len(live.charts.bars.opts["height"]) == 0
    x, _ = live.charts.tps_curve.getData()
    assert x is None or len(x) == 0
    assert not live.flag.isVisible()


def test_a_partial_and_a_failed_run_are_flagged(live, demo_db):
    db = store.open_db(demo_db)
    row = store.run(db, 4)
    store.Recorder(db).run_partial(4, {"requests_ok": row.requests_ok - 2, "requests_failed": 2},
                                   "2 of 8 requests failed; the first: HTTP 500")
    store.Recorder(db).run_failed(6, "the server exited during start (code 1)", "")
    store.close(db)
    live.show_run(demo_db, 4)
    assert live.flag.isVisible() and "2 of 8 requests failed" in live.flag.text() and "partial" in live.flag.text()
    assert "left out of speedups" in live.flag.text()
    live.show_run(demo_db, 6)
    assert live.flag.isVisible() and "failed" in live.flag.text() and "exited during start" in live.flag.text()
    live.show_run(demo_db, 3)
    assert not live.flag.isVisible()


def test_no_gpu_panels_on_a_host_without_gpus(live, demo_db):
    live.set_host_gpus(("none", []))
    live.show_run(demo_db, 3)
    live.redraw()
    charts = live.charts
    assert not charts.power_plot.isVisible() and charts.no_gpu.isVisible() and charts.no_gpu.text() == NO_GPU
    # Host CPU readings are still drawn.
    assert {name for (_, name) in live.charts.telemetry_curves} == {"host CPU"}
    # A run recorded on GPUs elsewhere still shows its GPU panels.
    gpu_db = copy_db(GPU_DB, demo_db.parent / "gpu.sqlite")
    store.open_db(gpu_db).conn.close()
    live.show_run(gpu_db, 3)
    live.redraw()
    assert live.charts.power_plot.isVisible() and not live.charts.no_gpu.isVisible()
    x, y = live.charts.telemetry_curves[("power", "GPU 0")].getData()
    assert len(x) > 10 and np.nanmax(y) > 50


def test_a_method_the_environment_lacks_is_marked_unavailable(qtbot):
    table = MethodsTable()
    qtbot.addWidget(table)
    table.add({"method": "ngram", "n": [2]})
    table.set_available(set(), "/opt/venv/bin/python")
    combo = table.rows[0].method
    item = combo.model().item(combo.findData("suffix"))
    assert not item.isEnabled() and item.text().endswith("(unavailable)")
    assert "arctic_inference" in item.toolTip() and "/opt/venv/bin/python -m pip install arctic-inference" in item.toolTip()
    assert combo.model().item(combo.findData("ngram")).isEnabled()
    table.set_available({"arctic_inference"}, "/opt/venv/bin/python")
    assert item.isEnabled() and not item.text().endswith("(unavailable)")


def test_no_default_plan_lists_a_method_the_default_environment_lacks():
    from workbench import methods, plan

    for name in ("demo.toml", "demo-quick.toml"):
        p = plan.load(ROOT / "resources" / "plans" / name)
        assert not [r for r in p.runs if methods.get(r.server.method).needs_package], name


def test_acceptance_alarms_are_said_as_they_come_and_cleared_by_the_next_sweep(live, demo_db):
    live.follow(demo_db)
    live.on_event(events.SweepStarted(experiment=1, db=str(demo_db), runs=10, pending=10))
    assert not live.alarms.isVisibleTo(live)
    live.on_event(events.Alarm(run=4, kind="collapsed", message="acceptance collapsed: MAL 1.01"))
    live.on_event(events.Alarm(run=6, kind="overcount", message="MAL over-counted by 3.1 % <EOS>"))
    assert live.alarms.isVisibleTo(live)
    text = live.alarms.text()
    assert "run 4: acceptance collapsed" in text and "run 6: MAL over-counted by 3.1 % &lt;EOS&gt;" in text
    for run in range(7, 10):
        live.on_event(events.Alarm(run=run, kind="mal_drop", message="MAL fell"))
    assert "run 4" not in live.alarms.text() and "(and 2 earlier)" in live.alarms.text()
    assert "run 4: acceptance collapsed" in live.alarms.toolTip()
    live.on_event(events.SweepStarted(experiment=2, db=str(demo_db), runs=2, pending=2))
    assert not live.alarms.isVisibleTo(live) and live.alarm_lines == []
