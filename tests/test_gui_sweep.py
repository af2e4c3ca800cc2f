"""The desktop app driving a real sweep: form -> Run -> live charts -> close keeping it running ->
reopen and reattach -> Stop -> History -> Open in Live; and a headless database (the sweep recorded
on a GPU) opened in the app."""

import json
import subprocess
import sys

import numpy as np
import pytest
from PySide6.QtCore import Qt

from app.main import MainWindow
from app.models.runs_model import COLUMNS
from helpers.recorded import copy_db
from workbench import store


def _window(qtbot, db_path, vllm):
    w = MainWindow(db_path, vllm)
    # Closing at teardown must never wait on a modal question; a sweep left running is stopped.
    w.ask_close = lambda: "stop"
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def _fill_form(page):
    doc = page.document()
    doc["name"] = "gui-e2e"
    doc["methods"] = [{"method": "ngram", "n": [2], "options": {"prompt_lookup_min": 2, "prompt_lookup_max": 4}}]
    doc["workload"].update({"names": ["builtin"], "concurrency": [2], "num_prompts": 6, "max_tokens": 48,
                            "warmup": 1, "repeats": 1, "temperature": 0.0})
    page.set_document(doc)


@pytest.mark.vllm
def test_gui_runs_a_sweep_live_and_reattaches(qtbot, tmp_path, vllm_install, demo_models):
    db_path = tmp_path / "gui.sqlite"
    first = _window(qtbot, db_path, vllm_install)
    page = first.experiment
    _fill_form(page)
    qtbot.waitUntil(lambda: page.run_button.isEnabled(), timeout=5000)
    assert page.commands.toPlainText().count("vllm serve ") == 2
    qtbot.mouseClick(page.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: first.sweep is not None, timeout=5000)
    assert first.tabs.currentWidget() is first.live
    # The baseline server is starting: close, keeping the sweep running.
    qtbot.waitUntil(lambda: first.live.feed is not None, timeout=60000)
    pid = first.sweep.pid
    first.ask_close = lambda: "keep"
    first.close()
    assert first.sweep.alive

    second = _window(qtbot, db_path, vllm_install)
    qtbot.waitUntil(lambda: second.sweep is not None, timeout=5000)
    assert second.sweep.pid == pid and second.tabs.currentWidget() is second.live
    live = second.live
    # The ngram run streams: per-position bars and throughput fill with its data.
    qtbot.waitUntil(lambda: len(live.positions) == 2 and live.samples.n >= 3 and live.requests.n >= 1,
                    timeout=480000)
    qtbot.wait(200)
    heights = live.charts.bars.opts["height"]
    assert len(heights) == 2 and heights[0] >= heights[1] and heights[0] > 0
    x, y = live.charts.tps_curve.getData()
    assert len(x) >= 3 and np.nanmax(y) > 0
    assert "ngram N=2" in live.title.text()
    assert second.live.progress.maximum() == 2
    qtbot.mouseClick(live.stop_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: second.sweep is None, timeout=120000)

    db = store.open_db(db_path, readonly=True)
    runs = {r.method: r for r in store.runs(db)}
    assert runs["baseline"].status == "completed"
    assert runs["ngram"].status in ("cancelled", "completed")
    assert db.execute("SELECT finished FROM sweeps").fetchone()[0] is not None
    # Closing and reopening the app mid-run cost nothing: the file is sound, the finished run whole.
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert runs["baseline"].requests_ok == 6 == db.execute(
        "SELECT count(*) FROM requests WHERE run_id = ?", [runs["baseline"].id]).fetchone()[0]

    history = second.history
    second.refresh_history()
    qtbot.waitUntil(lambda: not history.reading and len(history.visible_run_ids()) == 2, timeout=20000)
    history.combos["method"].setCurrentText("ngram")
    assert history.visible_run_ids() == [runs["ngram"].id]
    history.select_runs(history.visible_run_ids())
    history.open_button.click()
    assert second.tabs.currentWidget() is live
    qtbot.waitUntil(lambda: len(live.positions) == 2, timeout=5000)
    assert live.feed.run_id == runs["ngram"].id


def test_headless_database_shows_the_same_figures_as_show(qtbot, recorded_db, tmp_path, vllm_install):
    db_path = copy_db(recorded_db, tmp_path / "headless.sqlite")
    done = subprocess.run([sys.executable, "-m", "app", "show", "--json", "--db", str(db_path)],
                          capture_output=True, text=True, check=True)
    table = {row["run"]: row for row in json.loads(done.stdout)}
    w = _window(qtbot, db_path.parent / "other.sqlite", vllm_install)
    w.set_database(db_path)
    model = w.history.model
    qtbot.waitUntil(lambda: model.rowCount() == len(table), timeout=20000)  # checked and read off the GUI thread
    assert model.rowCount() == len(table) == 10
    col = {key: i for i, (key, _, _) in enumerate(COLUMNS)}
    for r in range(model.rowCount()):
        run_id = model.row(r).run.id
        shown = lambda key: model.data(model.index(r, col[key]))  # noqa: E731
        assert shown("mal") == table[run_id]["mal"]
        assert shown("acceptance_rate") == table[run_id]["acceptance_rate"]
        assert shown("output_tok_s") == table[run_id]["output_tok_s"]
        assert shown("method") == table[run_id]["method"]
    # Opening a draft_model run draws the sweep's seven other speculative runs faintly behind it.
    draft_run = next(run for run, row in table.items() if row["method"] == "draft_model" and row["n"] == "3")
    w.open_run(draft_run)
    qtbot.waitUntil(lambda: len(w.live.positions) == 3, timeout=5000)
    assert len(w.live.charts.faint_items) == 7
    assert w.live.positions == pytest.approx([float(v) for v in table[draft_run]["per_position"].split()], abs=5e-4)


def test_corrupt_database_is_refused_without_damage(qtbot, tmp_path, vllm_install, monkeypatch):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 500)
    w = _window(qtbot, tmp_path / "ok.sqlite", vllm_install)
    warnings = []
    monkeypatch.setattr("app.main.QMessageBox.warning", lambda *a: warnings.append(a[2]))
    w.set_database(bad)
    qtbot.waitUntil(lambda: w.opening is None, timeout=20000)
    assert warnings and "not a usable Draftbench database" in warnings[0]
    assert w.db_path == tmp_path / "ok.sqlite"
    assert bad.read_bytes() == b"garbage" * 500
