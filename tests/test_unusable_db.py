"""An unusable results database: the app starts on it, says why on the Experiment page, and keeps
Run disabled; the file is left as it was; no page raises."""

from __future__ import annotations

import hashlib

from workbench import plan
from workbench.usecases import findings


def _truncated(src, dst):
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 3])
    return dst


def test_a_truncated_results_file_disables_run_and_says_why(qtbot, tmp_path, recorded_db, vllm_install, monkeypatch):
    from app.main import MainWindow

    bad = _truncated(recorded_db, tmp_path / "results.sqlite")
    digest = hashlib.sha256(bad.read_bytes()).hexdigest()
    warned: list[str] = []
    monkeypatch.setattr("app.main.QMessageBox.warning", lambda *a: warned.append(a[2]))
    window = MainWindow(bad, vllm_install)
    qtbot.addWidget(window)
    window.show()
    page = window.experiment
    page.set_document(plan_doc())
    qtbot.waitUntil(lambda: page.status.has_errors(), timeout=20000)
    assert not page.run_button.isEnabled()
    assert "not a usable Draftbench database" in page.status.text()
    assert warned and "not a usable Draftbench database" in warned[0]
    window.statusBar().clearMessage()
    window.show_latest()  # what a sweep's end does, off the GUI thread: said in the status bar, never raised
    qtbot.waitUntil(lambda: window.statusBar().currentMessage().startswith("Results database unusable: "),
                    timeout=10000)
    assert "not a usable Draftbench database" in window.statusBar().currentMessage() and window.compare.rows == []
    page.request_run()
    assert window.sweep is None
    assert hashlib.sha256(bad.read_bytes()).hexdigest() == digest


def test_the_preflight_names_an_unusable_file(tmp_path, recorded_db, vllm_install, demo_models):
    p = plan.loads(plan_text())
    bad = _truncated(recorded_db, tmp_path / "results.sqlite")
    [finding] = findings.preflight_at(p, vllm_install, bad)
    assert finding.level == findings.ERROR and "not a usable Draftbench database" in str(finding)
    assert "\n" not in str(finding)
    other = tmp_path / "notes.sqlite"
    import sqlite3
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    [finding] = findings.preflight_at(p, vllm_install, other)
    assert "not a Draftbench database" in str(finding)
    assert not any(f.level == findings.ERROR for f in findings.preflight_at(p, vllm_install, recorded_db))


def plan_text() -> str:
    return ('name = "t"\n[target]\nmodel = "demo:smollm2-135m"\n[[methods]]\nmethod = "ngram"\nn = 2\n'
            '[workload]\ntemperature = 0.0\nnum_prompts = 2\nmax_tokens = 8\n')


def plan_doc() -> dict:
    import tomllib
    return tomllib.loads(plan_text())


def test_a_new_empty_results_file_is_no_fault(qtbot, tmp_path, vllm_install, monkeypatch):
    """A file with the schema and no experiment yet (a first start): Compare is empty and the status
    bar names the file; it is not called unusable."""
    from app.main import MainWindow
    from app.pages.compare_page import ComparePage
    from workbench import store

    path = tmp_path / "results.sqlite"
    store.open_db(path).conn.close()
    shown: list[list] = []
    real = ComparePage.set_runs
    monkeypatch.setattr(ComparePage, "set_runs", lambda self, rows, db: (shown.append(rows), real(self, rows, db)))
    window = MainWindow(path, vllm_install)
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: bool(shown), timeout=10000)
    assert shown[-1] == [] and window.compare.rows == []
    assert window.statusBar().currentMessage() == f"Results database: {path}"
