"""The desktop app offscreen: the main window opens with the demo experiment ready."""

import pytest

from app.main import MainWindow
from app.models.runs_model import HistoryRow, RunsModel
from workbench import store


@pytest.fixture
def window(qtbot, tmp_path, vllm_install):
    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_main_window_opens_with_the_demo_plan(window, qtbot):
    assert [window.tabs.tabText(i) for i in range(4)] == ["Experiment", "Live", "History", "Compare"]
    page = window.experiment
    # The quick demo: the baseline and n-gram lookup at one N, at one concurrency.
    assert page.name.text() == "demo-quick" and page.target.text() == "demo:smollm2-135m"
    assert [r.method.currentData() for r in page.rows] == ["ngram"]
    assert [r.n.text() for r in page.rows] == ["3"] and page.concurrency.text() == "4"
    commands = page.commands.toPlainText()
    assert commands.startswith("vllm serve ") and '"method":"ngram"' in commands
    assert page.run_button.isEnabled()
    assert "runs on" in page.status.text()


def test_a_bad_form_disables_run_and_says_why(window, qtbot):
    page = window.experiment
    page.rows[0].n.setText("0, 2")
    qtbot.waitUntil(lambda: not page.run_button.isEnabled(), timeout=3000)
    assert "N (num_speculative_tokens) must be" in page.status.text()
    page.rows[0].n.setText("two")
    qtbot.waitUntil(lambda: "whole numbers separated by commas" in page.status.text(), timeout=3000)
    page.rows[0].n.setText("2")
    page.target.setText("/no/such/model")
    qtbot.waitUntil(lambda: "does not exist" in page.status.text(), timeout=3000)


def test_plan_round_trips_through_a_file(window, tmp_path):
    page = window.experiment
    before = page.document()
    page.save_file(tmp_path / "p.toml")
    page.set_document({"target": {"model": "x/y"}, "workload": {"temperature": 0.5}})
    page.load_file(tmp_path / "p.toml")
    assert page.document() == before


def test_adaptive_n_round_trips_and_is_said_before_running(window, qtbot, tmp_path):
    page = window.experiment
    assert "sweep" not in page.document()
    page.adaptive.setChecked(True)
    assert page.document()["sweep"] == {"mode": "adaptive"} and 'mode = "adaptive"' in page.text()
    qtbot.waitUntil(lambda: "(adaptive N)" in page.status.text(), timeout=3000)
    page.save_file(tmp_path / "a.toml")
    page.adaptive.setChecked(False)
    page.load_file(tmp_path / "a.toml")
    assert page.adaptive.isChecked()


def test_runs_model_passes_qtmodeltester(qtmodeltester):
    model = RunsModel()
    model.set_rows([HistoryRow(run=store.RunRecord(
                        id=1, experiment_id=1, status=store.RunStatus.COMPLETED, method="ngram", n=3,
                        workload="builtin", concurrency=4, mal=2.4, acceptance_rate=0.36, output_tok_s=88.0),
                        tags="warm"),
                    HistoryRow(run=store.RunRecord(
                        id=2, experiment_id=1, status=store.RunStatus.FAILED, method="baseline", workload="builtin",
                        concurrency=1))])
    qtmodeltester.check(model)
