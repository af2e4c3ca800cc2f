"""The baseline first: a failed baseline run is tried again before any speculative server starts,
and speculative runs that would still have no baseline wait for a sweep that has one (unless the
plan says to run them anyway). Servers are the recorded vLLM stand-in."""

from __future__ import annotations

import sys

import pytest

from helpers.standin_sweep import SCRIPT, rows_by_label, standin_plan
from workbench import events, launch, plan, store
from workbench.sweep import runner

# The baseline server (started without a speculative config) dies at start-up as long as the
# counter file says so; each start takes one off. (argv is also asked for commands that are only
# shown or stored, so the count lives in what the server itself runs.)
FLAKY = """import os, sys
path, script = sys.argv[1], sys.argv[2]
left = int(open(path).read())
if left > 0:
    open(path, "w").write(str(left - 1))
    print("RuntimeError: killed by the test", flush=True)
    sys.exit(9)
os.execv(sys.executable, [sys.executable, script, *sys.argv[3:]])
"""


def _failing_baseline(monkeypatch, tmp_path, times: int) -> None:
    counter = tmp_path / "baseline-failures"
    counter.write_text(str(times))

    def argv(python, args):
        if "--speculative-config" in args:
            return [sys.executable, str(SCRIPT), *args]
        return [sys.executable, "-c", FLAKY, str(counter), str(SCRIPT), *args]

    monkeypatch.setattr(launch.vllm_cli, "argv", argv)


def _started(seen) -> list[str]:
    return ["spec" if "--speculative-config" in e.command else "baseline" for e in seen
            if isinstance(e, events.ServerStarting)]


def _sweep(tmp_path, vllm_install, sweep=None):
    seen: list = []
    p = plan.loads(standin_plan(sweep))
    r = runner.Runner(p, str(tmp_path / "r.sqlite"), vllm_install, emit=seen.append, scrape_interval_s=0.1)
    summary = r.run()
    r.db.conn.close()
    return summary, seen, rows_by_label(tmp_path / "r.sqlite")


def test_a_failed_baseline_is_retried_before_the_speculative_runs(demo_models, vllm_install, tmp_path, monkeypatch):
    _failing_baseline(monkeypatch, tmp_path, 1)
    summary, seen, rows = _sweep(tmp_path, vllm_install)
    assert _started(seen) == ["baseline", "baseline", "spec"]
    assert summary["completed"] == 4 and summary["failed"] == 0 and "note" not in summary
    assert rows["baseline c=1"]["status"] == rows["baseline c=2"]["status"] == "completed"
    assert rows["baseline c=1"]["error"] is None
    # The failed attempt is kept beside its redo (History shows both).
    db = store.open_db(tmp_path / "r.sqlite", readonly=True)
    kept = [r for r in store.runs(db) if r.redone_by]
    store.close(db)
    assert [(r.method, r.status) for r in kept] == [("baseline", "failed")] * 2  # c=1 and c=2


def test_speculative_runs_wait_when_the_baseline_still_fails(demo_models, vllm_install, tmp_path, monkeypatch):
    _failing_baseline(monkeypatch, tmp_path, 2)
    summary, seen, rows = _sweep(tmp_path, vllm_install)
    assert _started(seen) == ["baseline", "baseline"]  # no speculative server was started
    assert summary["completed"] == 0 and summary["failed"] == 2
    assert summary["note"].startswith("the baseline failed 2 times at builtin c=1, builtin c=2: 2 speculative run(s) "
                                      "not started"), summary["note"]
    assert "\n" not in summary["note"]
    for c in (1, 2):
        assert rows[f"baseline c={c}"]["status"] == "failed"
        assert rows[f"ngram c={c}"]["status"] == "pending"
        assert rows[f"ngram c={c}"]["error"].startswith("not started: the baseline failed 2 times")


def test_the_plan_may_run_them_without_a_baseline(demo_models, vllm_install, tmp_path, monkeypatch):
    _failing_baseline(monkeypatch, tmp_path, 5)
    summary, seen, rows = _sweep(tmp_path, vllm_install, {"without_baseline": "run", "baseline_retries": 0})
    assert _started(seen) == ["baseline", "spec"]
    assert summary["completed"] == 2 and rows["ngram c=1"]["status"] == "completed"


@pytest.mark.parametrize("sweep, error", [
    ({"without_baseline": "maybe"}, 'sweep.without_baseline must be "skip" or "run", not \'maybe\''),
    ({"baseline_retries": 9}, "sweep.baseline_retries must be between 0 and 5, not 9"),
])
def test_bad_baseline_options_are_one_line(sweep, error):
    with pytest.raises(plan.PlanError, match="^" + error.replace("(", r"\(").replace(")", r"\)") + "$"):
        plan.loads(standin_plan(sweep))


def test_compare_says_why_without_a_baseline_and_offers_to_run_it_again(demo_models, vllm_install, tmp_path,
                                                                        monkeypatch, qtbot):
    from app.pages.compare_page import ComparePage
    from workbench import store
    from workbench.usecases import compare_view, sweeps

    _failing_baseline(monkeypatch, tmp_path, 2)
    summary, _, _ = _sweep(tmp_path, vllm_install, {"without_baseline": "run"})
    db_path = tmp_path / "r.sqlite"
    rows = compare_view.select(db_path)
    view = compare_view.build(rows, db_path)
    assert view.answer == []
    assert view.no_baseline == ("No speedup can be given: the baseline has no completed run (it failed: "
                                "vLLM exited during start-up: RuntimeError: killed by the test), so nothing here can be compared with it.")
    page = ComparePage()
    qtbot.addWidget(page)
    page.show_view(view)
    note = page.baseline_note
    assert note.isVisibleTo(page) and note.label.text() == view.no_baseline
    assert note.button.text() == "Run the baseline again" and note.button.isVisibleTo(page)
    with qtbot.waitSignal(note.run_again) as asked:
        note.button.click()
    assert asked.args == [summary["experiment"]]
    # The plan that runs it again resumes the same experiment: its failed baseline runs are all it has left.
    again = plan.load(sweeps.plan_file_of(db_path, summary["experiment"]))
    db = store.open_db(db_path, readonly=True)
    try:
        assert store.latest_experiment(db) == summary["experiment"]
        assert {r.key for r in store.runs_of_experiment(db, summary["experiment"])} == {r.key for r in again.runs}
    finally:
        store.close(db)
    # With a baseline there is nothing to say.
    page.show_view(compare_view.build([]))
    assert not note.isVisibleTo(page)
