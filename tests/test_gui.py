"""The desktop app offscreen: the main window opens with the demo experiment ready."""

import pytest

from app.main import MainWindow
from app.runs_model import RunsModel


@pytest.fixture
def window(qtbot, tmp_path):
    w = MainWindow(tmp_path / "results.sqlite")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_main_window_opens_with_the_demo_plan(window, qtbot):
    assert window.tabs.tabText(0) == "Experiment" and window.tabs.tabText(1) == "History"
    page = window.experiment
    assert 'name = "demo"' in page.editor.toPlainText()
    commands = page.commands.toPlainText()
    assert commands.startswith("vllm serve ") and '"method":"ngram"' in commands
    assert page.run_button.isEnabled()
    assert "runs on" in page.status.text()


def test_a_bad_plan_disables_run_and_says_why(window, qtbot):
    page = window.experiment
    page.editor.setPlainText(page.editor.toPlainText().replace('method = "ngram"', 'method = "warp"'))
    qtbot.waitUntil(lambda: not page.run_button.isEnabled(), timeout=3000)
    assert "unknown method 'warp'" in page.status.text()


def test_runs_model_passes_qtmodeltester(qtmodeltester):
    model = RunsModel()
    model.set_rows([{"id": 1, "status": "completed", "method": "ngram", "n": 3, "workload": "builtin",
                     "concurrency": 4, "mal": 2.4, "acceptance_rate": 0.36, "output_tok_s": 88.0},
                    {"id": 2, "status": "failed", "method": "baseline", "n": None, "workload": "builtin",
                     "concurrency": 1, "mal": None, "acceptance_rate": None, "output_tok_s": None}])
    qtmodeltester.check(model)
