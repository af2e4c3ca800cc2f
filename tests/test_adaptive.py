"""Adaptive sweeps on real vLLM CPU servers (demo target, n-gram N = 1..5, concurrency 1) judged
against the exhaustive sweep of the same plan, and the prediction drawn on the Compare page.

The exhaustive sweep shares the adaptive sweep's measurements: after the adaptive sweep, the N it
skipped are run into the same experiment, which then holds every N of the plan, each from its
own launch, exactly as an exhaustive sweep would. The verdict is so about the adaptive sweep's
decisions (was a skipped N really not better?) on one set of measurements, and the whole module
costs the six launches of one exhaustive sweep instead of about ten."""

import json
import math
import re
import subprocess
import sys
import time
from types import SimpleNamespace

import pyqtgraph as pg
import pytest

from helpers.plans import NGRAM, demo_plan
from workbench import plan, store
from workbench.analysis import compare, recommend
from workbench.sweep.adaptive import AdaptiveRunner
from workbench.sweep.runner import Runner

# A busy 2-core machine can take several minutes per launch: the module's launches share this.
pytestmark = [pytest.mark.vllm, pytest.mark.timeout(2400)]

NGRAM_PLAN = demo_plan(
    "ngram-adaptive", methods=[{**NGRAM, "n": [1, 2, 3, 4, 5]}],
    workload={"num_prompts": 3, "max_tokens": 32, "concurrency": [1], "repeats": 3},
    sweep={"mode": "adaptive"}, server={"health_timeout_s": 600})


def _launches(events: list) -> int:
    return sum(e.KIND == "server_starting" for e in events)


@pytest.fixture(scope="module")
def sweep(demo_models, vllm_install, real_vllm, tmp_path_factory):
    path = tmp_path_factory.mktemp("adaptive") / "results.sqlite"
    p = plan.loads(NGRAM_PLAN)
    events, again, rest_events = [], [], []
    t0 = time.monotonic()
    summary = AdaptiveRunner(p, str(path), vllm_install, emit=events.append).run()
    t1 = time.monotonic()
    # Run again on the finished sweep: every decision is re-derived from the stored runs.
    resumed = AdaptiveRunner(p, str(path), vllm_install, emit=again.append).run()
    db = store.open_db(path, readonly=True)
    adaptive_runs = store.runs(db)
    recommendation = next(db["recommendations"].rows)
    db.conn.close()
    done = {r.key for r in adaptive_runs if r.status == "completed"}
    t2 = time.monotonic()
    Runner(p.part([r for r in p.runs if r.key not in done]), str(path), vllm_install, emit=rest_events.append).run()
    print(f"\nadaptive sweep: {_launches(events)} launches in {t1 - t0:.0f} s; the skipped N: "
          f"{_launches(rest_events)} launches in {time.monotonic() - t2:.0f} s")
    return SimpleNamespace(path=path, plan=p, events=events, summary=summary, again=again, resumed=resumed,
                           adaptive_runs=adaptive_runs, recommendation=recommendation, rest_events=rest_events)


def test_adaptive_sweep_finds_the_exhaustive_best_n_with_fewer_launches(sweep):
    events, summary, row = sweep.events, sweep.summary, sweep.recommendation
    assert summary["failed"] == 0 and not summary["cancelled"], events
    kinds = [e.KIND for e in events]
    assert kinds[0] == "sweep_started" and kinds[-1] == "sweep_finished" and kinds.count("sweep_started") == 1

    # Launches: counted from the events, and the same from the store (one server key per launch).
    launches, exhaustive_launches = _launches(events), len(sweep.plan.servers())
    runs = sweep.adaptive_runs
    assert summary["launches"] == launches == len({r.server_key for r in runs})
    assert exhaustive_launches == 6 and launches < exhaustive_launches
    assert launches + _launches(sweep.rest_events) == exhaustive_launches
    assert all(r.status == "completed" for r in runs) and len({r.experiment_id for r in runs}) == 1

    # The path it took follows its rule: probes N=5 and N=1 first, then only what a prediction asked for.
    predictions = [e for e in events if e.KIND == "prediction"]
    measured = {r.n for r in runs if r.method == "ngram"}
    assert measured == {5, 1} | {n for e in predictions for n in e.next_n}
    assert not predictions[-1].next_n

    # The stored recommendation is what the model says about the adaptive sweep's runs.
    rec = next(iter(recommend.from_configs(compare.configs(runs)).values()))
    assert row["best_n"] == rec.best_n and row["measured_speedup"] == pytest.approx(rec.best.measured)
    assert row["runs_used"] == launches and row["runs_total"] == exhaustive_launches
    assert json.loads(row["measured_n"]) == sorted(measured)
    assert re.fullmatch(r"ngram · builtin · c=1: best N = \d, predicted speedup \d+\.\d\d ± \d+\.\d\d, "
                        rf"measured \d+\.\d\d, runs used {launches} of 6( \(N=\d is within noise\))?", row["summary"])
    assert any(e.KIND == "recommendation" and e.message == row["summary"] for e in events)

    # The same best N as the exhaustive sweep, within its noise: the adaptive pick is the best of
    # all five N there, or short of the best by less than the 95% interval of the difference of
    # two configurations' mean speedups (run-to-run noise pooled over every repeat of the sweep).
    cs = compare.configs(store.runs(store.open_db(sweep.path, readonly=True)))
    every = {c.n: c for c in cs if c.method == "ngram"}
    assert sorted(every) == [1, 2, 3, 4, 5]
    best = max(every, key=lambda n: every[n].speedup)
    pooled, dof = recommend.noise(cs)
    tolerance = compare.t95(dof) * every[best].speedup * pooled * math.sqrt(2 / every[best].tok_s.n)
    gap = every[best].speedup - every[row["best_n"]].speedup
    print("\nexhaustive speedups: " + ", ".join(f"N={n}: {every[n].speedup:.3f}" for n in sorted(every))
          + f"; best N={best}; tolerance {tolerance:.3f} (pooled sd {pooled:.3f}, {dof} dof)\n"
          + f"adaptive: {launches} launches of {exhaustive_launches}: {row['summary']}; gap {gap:.3f}")
    assert gap <= tolerance, (best, row["best_n"], gap, tolerance)


def test_a_finished_adaptive_sweep_resumes_to_the_same_answer_without_launching(sweep):
    assert _launches(sweep.again) == 0 and sweep.resumed["experiment"] == sweep.summary["experiment"]
    first = [e.message for e in sweep.events if e.KIND == "recommendation"]
    assert [e.message for e in sweep.again if e.KIND == "recommendation"] == first
    shown = subprocess.run([sys.executable, "-m", "app", "show", "--db", str(sweep.path)], capture_output=True,
                           text=True)
    assert shown.returncode == 0, shown.stderr
    assert f"  {first[0]}" in shown.stdout.splitlines()


def test_compare_page_draws_the_prediction_beside_the_measured_points(sweep, qtbot):
    from app.widgets.charts import PREDICTION_TIP
    from app.pages.compare_page import ComparePage

    rows = store.runs(store.open_db(sweep.path, readonly=True))
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, sweep.path)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    item = page.plots["prediction"].getPlotItem()
    assert page.plots["prediction"].toolTip() == PREDICTION_TIP
    rec = next(iter(recommend.from_configs(compare.configs(rows)).values()))
    bands = [i for i in item.items if isinstance(i, pg.FillBetweenItem)]
    assert len(bands) == 1 and "95% interval" in bands[0].toolTip()
    low, high = (c.getData()[1] for c in bands[0].curves)
    assert list(low) == pytest.approx([p.low for p in rec.curve])
    assert list(high) == pytest.approx([p.high for p in rec.curve])
    lines = {d.name(): d for d in item.listDataItems() if d.name()}
    predicted = lines["ngram · builtin · c=1 · predicted"]
    assert list(predicted.getData()[0]) == [1, 2, 3, 4, 5]
    assert list(predicted.getData()[1]) == pytest.approx([p.speedup for p in rec.curve])
    assert f"best N = {rec.best_n}" in predicted.toolTip()
    every = {c.n: c for c in compare.configs(rows) if c.method == "ngram"}
    assert list(lines["ngram · builtin · c=1 · measured"].getData()[1]) == pytest.approx(
        [every[n].speedup for n in range(1, 6)])
