"""A pinned baseline: one stored run without speculation, possibly of another sweep, that every
speedup and latency ratio is taken against (workbench.analysis.pinned_baseline), in the compare
view, `draftbench show --baseline`, the Compare page (History's pin) and the HTML report. The runs
are stored through the store's own recorder; every expected figure is worked out here from the
stored rows."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app import exports
from app.exports import write_report
from app.pages import history_views
from app.pages.compare_page import ComparePage
from app.pages.history import HistoryPage
from helpers.cli_table import shown_table
from workbench import cli, store
from workbench.analysis import pinned_baseline
from workbench.analysis.compare import Figures
from workbench.usecases import compare_view

LATENCY = ("ttft_p50_ms", "itl_p99_ms")


def _runs(record, exp: int, specs: list[tuple]) -> dict[str, int]:
    """Runs of experiment `exp`, each (key, method, n, workload, concurrency, status, tok/s, ttft p50, itl p99)."""
    ids = record.register_runs(exp, [s[0] for s in specs], lambda i: {
        "experiment_id": exp, "key": specs[i][0], "seq": i, "status": "pending", "target": "/models/Qwen3-8B",
        "method": specs[i][1], "n": specs[i][2], "workload": specs[i][3], "concurrency": specs[i][4],
        "temperature": 0.0, "max_tokens": 128, "num_prompts": 16, "repeat": 1})
    for key, method, _, _, _, status, tok_s, ttft, itl in specs:
        figures = {"output_tok_s": tok_s, "ttft_p50_ms": ttft, "itl_p99_ms": itl,
                   "mal": None if method == "baseline" else 2.0}
        if status == "failed":
            record.run_failed(ids[key], "the server exited (code 1)", "")
        elif status == "partial":
            record.run_partial(ids[key], figures, "3 of 16 requests failed")
        else:
            record.run_completed(ids[key], figures)
    return ids


@pytest.fixture
def results(tmp_path):
    """An earlier sweep ("reference": the baseline to pin, at c=1 only, and runs that cannot be one)
    and the sweep compared ("tuned": its own baselines at c=1 and c=4, ngram N=2 at both)."""
    path = tmp_path / "results.sqlite"
    db = store.open_db(path)
    record = store.Recorder(db)
    reference = record.experiment("reference", "hash-reference", "", "", {})
    ids = _runs(record, reference, [
        ("pin", "baseline", None, "gsm8k", 1, "completed", 50.0, 80.0, 30.0),
        ("other-workload", "baseline", None, "builtin", 1, "completed", 45.0, 70.0, 25.0),
        ("failed", "baseline", None, "gsm8k", 1, "failed", None, None, None),
        ("partial", "baseline", None, "gsm8k", 1, "partial", 48.0, 82.0, 31.0),
        ("spec", "ngram", 3, "gsm8k", 1, "completed", 70.0, 85.0, 40.0)])
    tuned = record.experiment("tuned", "hash-tuned", "", "", {})
    ids.update(_runs(record, tuned, [
        ("base-1", "baseline", None, "gsm8k", 1, "completed", 40.0, 100.0, 20.0),
        ("base-4", "baseline", None, "gsm8k", 4, "completed", 120.0, 150.0, 35.0),
        ("ngram-1a", "ngram", 2, "gsm8k", 1, "completed", 60.0, 90.0, 36.0),
        ("ngram-1b", "ngram", 2, "gsm8k", 1, "completed", 64.0, 94.0, 44.0),
        ("ngram-4", "ngram", 2, "gsm8k", 4, "completed", 150.0, 160.0, 50.0)]))
    store.close(db)
    return path, tuned, ids


def _stored(path, exp: int) -> tuple[list[store.RunRecord], dict[int, store.RunRecord]]:
    db = store.open_db(path, readonly=True)
    try:
        return store.runs_of_experiment(db, exp), {r.id: r for r in store.runs(db)}
    finally:
        store.close(db)


def _at(view, concurrency: int) -> Figures:
    return next(r for r in view.measured_table if r.concurrency == concurrency)


def test_speedups_and_latency_ratios_are_against_the_pinned_run(results):
    path, tuned, ids = results
    rows, every = _stored(path, tuned)
    pin, own = every[ids["pin"]], every[ids["base-1"]]
    spec = [every[ids["ngram-1a"]], every[ids["ngram-1b"]]]
    mean = sum(r.output_tok_s for r in spec) / 2

    unpinned = compare_view.build(rows, path)
    assert _at(unpinned, 1).speedup == pytest.approx(mean / own.output_tok_s)  # 1.55, its own baseline's
    view = compare_view.build(rows, path, pinned=ids["pin"])
    at1 = _at(view, 1)
    assert at1.speedup == pytest.approx(mean / pin.output_tok_s)  # 62 / 50 = 1.24
    assert at1.baseline_tok_s == pytest.approx(pin.output_tok_s)
    for key in LATENCY:
        mine = sum(getattr(r, key) for r in spec) / 2
        assert getattr(at1, key.removesuffix("_ms") + "_ratio") == pytest.approx(mine / getattr(pin, key))
    [answer] = [r for r in view.answer if r.concurrency == 1]
    assert answer.speedup == pytest.approx(mean / pin.output_tok_s)
    # The pin has no run at c=4: no number there, and one sentence that says why.
    assert _at(unpinned, 4).speedup == pytest.approx(150.0 / 120.0)
    assert _at(view, 4).speedup is None and _at(view, 4).itl_p99_ratio is None
    assert [r.concurrency for r in view.answer] == [1]
    assert view.pinned_missing == "The pinned baseline ran at c=1 only, so nothing at c=4 has a speedup here."
    assert view.pinned_note == (f"Speedups and latency ratios are against the pinned baseline, run {ids['pin']} "
                                f"(Qwen3-8B on gsm8k at c=1, 50.0 tok/s), from experiment {pin.experiment_id} "
                                "“reference”, another experiment than the runs compared.")
    assert view.pinned_row.id == ids["pin"] and view.no_baseline == ""
    assert unpinned.pinned_note == unpinned.pinned_missing == "" and unpinned.pinned_row is None


def test_a_pin_on_another_workload_is_used_and_said(results):
    path, tuned, ids = results
    rows, every = _stored(path, tuned)
    view = compare_view.build(rows, path, pinned=ids["other-workload"])
    assert _at(view, 1).speedup == pytest.approx(62.0 / every[ids["other-workload"]].output_tok_s)
    assert (f"the pinned baseline, run {ids['other-workload']}, differs from the runs compared with it in "
            "workload (builtin against gsm8k)") in view.trust


@pytest.mark.parametrize("key, said", [
    ("spec", "cannot be the baseline: it is speculative (ngram N=3); pin a run without speculation"),
    ("failed", "cannot be the baseline: it failed"),
    ("partial", "cannot be the baseline: some of its requests failed (count partial runs to use it)"),
])
def test_a_run_that_cannot_be_the_baseline_is_refused_in_one_line(results, key, said):
    path, tuned, ids = results
    rows, _ = _stored(path, tuned)
    with pytest.raises(pinned_baseline.PinnedBaselineError) as refused:
        compare_view.build(rows, path, pinned=ids[key])
    assert str(refused.value) == f"run {ids[key]} {said}"
    with pytest.raises(pinned_baseline.PinnedBaselineError, match="^no run 999 in the database"):
        compare_view.build(rows, path, pinned=999)


def test_a_partial_pin_counts_when_partial_runs_do(results):
    path, tuned, ids = results
    rows, every = _stored(path, tuned)
    view = compare_view.build(rows, path, include_partial=True, pinned=ids["partial"])
    assert _at(view, 1).speedup == pytest.approx(62.0 / every[ids["partial"]].output_tok_s)


def _show(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(["show", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_show_baseline_compares_against_that_run(results, capsys):
    path, tuned, ids = results
    code, out, err = _show(capsys, "--db", str(path), "--baseline", str(ids["pin"]))
    assert code == 0, err
    assert out.startswith(f"Speedups and latency ratios are against the pinned baseline, run {ids['pin']} "
                          "(Qwen3-8B on gsm8k at c=1, 50.0 tok/s), from experiment 1 “reference”, another "
                          "experiment than the runs compared. The pinned baseline ran at c=1 only, so nothing at "
                          "c=4 has a speedup here.\n")
    assert _speedup_column(out) == [("1", "1.24"), ("4", "–")]  # 62 / 50; none at c=4
    # Each run's own speedup in the runs table, over the same pinned run: the own baseline's too.
    assert _runs_column(out) == [("baseline", "1", "0.80"), ("baseline", "4", ""), ("ngram", "1", "1.20"),
                                 ("ngram", "1", "1.28"), ("ngram", "4", "")]
    code, out, _ = _show(capsys, "--db", str(path))
    assert code == 0 and "pinned" not in out
    assert _speedup_column(out) == [("1", "1.55"), ("4", "1.25")]
    assert _runs_column(out)[2:4] == [("ngram", "1", "1.50"), ("ngram", "1", "1.60")]


def _speedup_column(out: str) -> list[tuple[str, str]]:
    head, *body = shown_table(out)
    conc, speedup = head.index("Conc."), head.index("Speedup")
    return [(r[conc], r[speedup]) for r in body]


def _runs_column(out: str) -> list[tuple[str, str, str]]:
    """(method, concurrency, speedup) of each line of the runs table, the first table printed."""
    lines = out.split("-\n", 1)[1].split("\n\n", 1)[0].splitlines()
    head = next(line for line in out.splitlines() if line.startswith("method"))
    at = head.index("speedup")
    return [(line.split()[0], line[head.index("conc"):].split()[0], line[at:at + 7].strip()) for line in lines]


def test_show_one_run_against_the_pinned_run(results, capsys):
    path, _, ids = results
    def summary(run: str, *pin: str) -> dict[str, str]:
        code, out, _ = _show(capsys, run, "--db", str(path), *pin)
        assert code == 0
        return {line[:34].strip(): line[34:].strip() for line in out.splitlines()}

    pinned = ("--baseline", str(ids["pin"]))
    assert summary(str(ids["ngram-1a"]), *pinned)[f"speedup vs pinned run {ids['pin']}"] == "1.20"  # 60 / 50
    assert summary(str(ids["ngram-1a"]))["speedup vs baseline"] == "1.50"  # 60 / 40, its own
    assert summary(str(ids["ngram-4"]), *pinned)[f"speedup vs pinned run {ids['pin']}"] == "- (the pinned run ran at c=1)"


@pytest.mark.parametrize("which, said", [
    ("spec", "cannot be the baseline: it is speculative (ngram N=3)"),
    ("unknown", "no run 999 in the database to pin as the baseline"),
])
def test_show_baseline_refuses_in_one_line(results, capsys, which, said):
    path, _, ids = results
    code, out, err = _show(capsys, "--db", str(path), "--baseline", str(ids.get(which, 999)))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and said in err and "Traceback" not in err


def test_the_report_says_which_run_is_the_pinned_baseline(results, qapp, tmp_path):
    path, tuned, ids = results
    rows, _ = _stored(path, tuned)
    view = compare_view.build(rows, path, pinned=ids["pin"])
    text = write_report(view, tmp_path / "pinned.html", "Pinned").read_text()
    assert "Pinned baseline." in text and "“reference”, another experiment than the runs compared." in text
    assert "nothing at c=4 has a speedup here" in text
    # The pinned run is listed with the runs, though of another experiment.
    assert f"<tr><td>{ids['pin']}</td>" in text
    plain = write_report(compare_view.build(rows, path), tmp_path / "plain.html", "Own").read_text()
    assert "Pinned baseline." not in plain and f"<tr><td>{ids['pin']}</td>" not in plain


def test_report_baseline_on_the_command_line(results, qapp, tmp_path, capsys):
    path, tuned, ids = results
    out = tmp_path / "cli.html"
    argv = ["report", "--db", str(path), "--experiment", str(tuned), "--out", str(out)]
    assert cli.main([*argv, "--baseline", str(ids["pin"])], draw=exports.main) == 0
    assert f"against the pinned baseline, run {ids['pin']} " in out.read_text()
    assert cli.main([*argv, "--baseline", str(ids["spec"])], draw=exports.main) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"draftbench: run {ids['spec']} cannot be the baseline: it is speculative "
                                        "(ngram N=3); pin a run without speculation"]


@pytest.fixture
def pages(qtbot, results):
    """History and Compare on the results file, wired as the main window wires them."""
    path, tuned, ids = results
    history, compare = HistoryPage(), ComparePage()
    for page in (history, compare):
        qtbot.addWidget(page)
    history.pinned_changed.connect(lambda _: compare.repin())
    history.load(path)
    qtbot.waitUntil(lambda: not history.reading and history.model.rowCount() == 10, timeout=10000)
    rows, _ = _stored(path, tuned)
    compare.set_runs(rows, path)
    qtbot.waitUntil(lambda: not compare.building, timeout=10000)
    yield history, compare, ids
    history_views.pin_baseline(path, None)


def _speedups(compare) -> dict[int, float | None]:
    return {r.concurrency: r.speedup for r in compare.view.measured_table}


def _pin_in_history(qtbot, history, compare, run_id: int) -> None:
    history.select_runs([run_id])
    qtbot.mouseClick(history.pin_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not compare.building, timeout=10000)


def test_compare_follows_the_pin_set_in_history_and_goes_back_when_cleared(pages, qtbot):
    history, compare, ids = pages
    note = compare.baseline_note
    assert not note.isVisibleTo(compare)
    assert _speedups(compare) == pytest.approx({1: 62.0 / 40.0, 4: 150.0 / 120.0})

    _pin_in_history(qtbot, history, compare, ids["pin"])
    assert compare.view.pinned_row.id == ids["pin"]
    assert _speedups(compare)[1] == pytest.approx(62.0 / 50.0) and _speedups(compare)[4] is None
    assert note.isVisibleTo(compare) and not note.button.isVisibleTo(compare)
    assert note.label.text().startswith(f"Speedups and latency ratios are against the pinned baseline, run {ids['pin']}")
    assert "“reference”" in note.label.text() and "nothing at c=4 has a speedup here" in note.label.text()

    _pin_in_history(qtbot, history, compare, ids["pin"])  # pinned again: unpinned
    assert history_views.pinned_baseline(compare.db_path) is None
    assert _speedups(compare) == pytest.approx({1: 62.0 / 40.0, 4: 150.0 / 120.0})
    assert not note.isVisibleTo(compare) and compare.view.pinned_row is None


def test_a_speculative_pin_is_said_and_the_own_baselines_kept(pages, qtbot):
    history, compare, ids = pages
    _pin_in_history(qtbot, history, compare, ids["spec"])
    assert _speedups(compare) == pytest.approx({1: 62.0 / 40.0, 4: 150.0 / 120.0})
    assert compare.baseline_note.label.text() == (
        f"The pinned baseline is not used (run {ids['spec']} cannot be the baseline: it is speculative (ngram N=3); "
        "pin a run without speculation), so speedups are against each experiment's own baseline.")


def test_the_main_window_redraws_compare_when_history_pins(qtbot, results, vllm_install):
    from app.main import MainWindow

    path, tuned, ids = results
    window = MainWindow(path, vllm_install)
    qtbot.addWidget(window)
    # The latest experiment ("tuned") is on Compare once the file is checked and its view built.
    qtbot.waitUntil(lambda: window.opening is None and bool(window.compare.rows) and not window.compare.building
                    and not window.history.reading and window.history.model.rowCount() == 10, timeout=20000)
    assert {r.experiment_id for r in window.compare.rows} == {tuned}
    try:
        _pin_in_history(qtbot, window.history, window.compare, ids["pin"])
        assert window.compare.view.pinned_row.id == ids["pin"]
        assert _speedups(window.compare)[1] == pytest.approx(62.0 / 50.0)
    finally:
        history_views.pin_baseline(path, None)
