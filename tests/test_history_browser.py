"""History as a results browser: sweeps as parent rows, a search box, tags and notes, a diff of two
runs, saved views and a pinned baseline, driven through the page's widgets on real results files."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.models.sweep_tree import EXPERIMENT_ROLE
from app.pages import history_views
from app.pages.history import HistoryPage
from workbench import store

KEYS = ["baseline", "ngram-2", "draft_model-3"]


def two_sweeps(path):
    """A results file with two experiments of three runs each (the second's ngram run failed)."""
    db = store.open_db(path)
    record = store.Recorder(db)
    ids = {}
    for name, workload in (("first", "builtin"), ("second", "gsm8k")):
        exp = record.experiment(name, f"hash-{name}", "", "", {})
        made = record.register_runs(exp, KEYS, lambda i, e=exp, w=workload: {
            "experiment_id": e, "key": KEYS[i], "seq": i, "status": "pending", "target": "/models/Qwen3-8B",
            "method": KEYS[i].split("-")[0], "n": int(KEYS[i].split("-")[1]) if "-" in KEYS[i] else None,
            "workload": w, "concurrency": 8, "temperature": 0.0})
        for key, run_id in made.items():
            if name == "second" and key == "ngram-2":
                db["runs"].update(run_id, {"status": "failed", "error": "server died"})
            else:
                record.run_completed(run_id, {"mal": 1.0 + len(key) / 10, "output_tok_s": 100.0 + run_id})
            ids[name, key] = run_id
    store.close(db)
    return ids


@pytest.fixture
def history(qtbot, tmp_path):
    path = tmp_path / "results.sqlite"
    ids = two_sweeps(path)
    page = HistoryPage()
    qtbot.addWidget(page)
    page.resize(1280, 800)
    page.show()
    qtbot.waitExposed(page)
    page.load(path)
    qtbot.waitUntil(lambda: not page.reading and page.model.rowCount() == 6, timeout=10000)
    page.ids = ids
    return page


def test_sweeps_are_parent_rows_with_their_runs_beneath_the_latest_open(history):
    proxy, view = history.proxy, history.view
    # The page, with its new search, views, pin and notes, still fits a 1280-pixel-wide window.
    assert history.minimumSizeHint().width() <= 1200
    assert proxy.rowCount() == 2
    first, second = proxy.index(0, 0), proxy.index(1, 0)
    assert [first.data(EXPERIMENT_ROLE), second.data(EXPERIMENT_ROLE)] == [1, 2]
    assert "first" in first.data() and "second" in second.data()
    assert proxy.rowCount(first) == proxy.rowCount(second) == 3
    assert view.isExpanded(second) and not view.isExpanded(first)
    assert proxy.index(1, 1).data() == "2 completed, 1 failed"
    # Selecting an experiment's row stands for its runs.
    view.selectionModel().select(second, view.selectionModel().SelectionFlag.Select
                                 | view.selectionModel().SelectionFlag.Rows)
    assert history.selected_ids() == sorted(history.ids["second", k] for k in KEYS)


def test_search_box_filters_runs_and_ctrl_f_focuses_it(history, qtbot):
    history.activateWindow()
    qtbot.keyClick(history.view, Qt.Key_F, Qt.ControlModifier)
    assert QApplication.focusWidget() is history.search
    qtbot.keyClicks(history.search, "ngram")
    assert history.visible_run_ids() == [history.ids["first", "ngram-2"], history.ids["second", "ngram-2"]]
    # Every word must match; the first experiment's row goes with its runs, and the match is unfolded.
    history.search.setText("failed ngram")
    assert history.visible_run_ids() == [history.ids["second", "ngram-2"]]
    assert history.proxy.rowCount() == 1 and history.view.isExpanded(history.proxy.index(0, 0))
    history.search.setText("gsm8k")
    assert len(history.visible_run_ids()) == 3
    qtbot.keyClick(history.search, Qt.Key_Escape)
    assert history.search.text() == "" and len(history.visible_run_ids()) == 6


def test_store_keeps_tags_and_notes_and_forgets_them_with_the_run(tmp_path):
    ids = two_sweeps(tmp_path / "r.sqlite")
    db = store.open_db(tmp_path / "r.sqlite")
    run_id = ids["first", "baseline"]
    store.set_annotation(db, run_id, "keep,  h200 keep", "  cold cache  ")
    assert store.annotated_runs(db) == [store.Annotation(run_id=run_id, tags="keep, h200", notes="cold cache")]
    store.set_annotation(db, run_id, "", "")
    assert store.annotated_runs(db) == []
    store.set_annotation(db, run_id, "x", "")
    store.delete_run(db, run_id)
    assert store.annotated_runs(db) == []


def test_tags_and_notes_are_edited_in_history_and_searchable(history, qtbot):
    run_id = history.ids["second", "draft_model-3"]
    history.select_runs([run_id])
    assert history.notes.run_id == run_id and history.notes.tags.isEnabled()
    history.notes.tags.setText("warm, keeper")
    history.notes.notes.setPlainText("Draft model on a warm prefix cache")
    qtbot.mouseClick(history.notes.save_button, Qt.LeftButton)
    # Written on the worker's thread, then read back into the table.
    qtbot.waitUntil(lambda: not history.reading and history.model.row(5).tags == "warm, keeper", timeout=10000)
    db = store.open_db(history.db_path, readonly=True)
    assert store.annotated_runs(db) == [store.Annotation(run_id=run_id, tags="warm, keeper",
                                                         notes="Draft model on a warm prefix cache")]
    store.close(db)
    assert history.selected_ids() == [run_id]  # the refresh kept the selection
    history.search.setText("prefix")
    assert history.visible_run_ids() == [run_id]
    history.search.setText("keeper")
    assert history.visible_run_ids() == [run_id]
    # Two runs selected: no single run's notes to edit.
    history.search.clear()
    history.select_runs([run_id, history.ids["first", "baseline"]])
    assert history.notes.run_id is None and not history.notes.tags.isEnabled()


def test_two_selected_runs_are_diffed_field_by_field(history, qtbot):
    a, b = history.ids["first", "ngram-2"], history.ids["second", "ngram-2"]
    history.select_runs([a])
    assert not history.diff_button.isEnabled()
    history.select_runs([a, b])
    assert history.diff_button.isEnabled()
    qtbot.mouseClick(history.diff_button, Qt.LeftButton)
    diff = history.diff
    assert diff is not None and diff.isVisible()
    qtbot.addWidget(diff)
    every = diff.visible_fields()
    # Every field of both: configuration and figures, and the reader's notes.
    assert {"method", "n", "workload", "concurrency", "temperature", "mal", "output_tok_s", "status", "error",
            "tags", "notes"} <= set(every)
    assert diff.size().width() <= 1280 and diff.size().height() <= 800
    diff.only.click()
    only = diff.visible_fields()
    assert {"id", "experiment_id", "workload", "status", "error", "mal"} <= set(only)
    assert not {"method", "n", "concurrency", "target", "tags"} & set(only)
    row = every.index("workload")
    assert (diff.table.item(row, 1).text(), diff.table.item(row, 2).text()) == ("builtin", "gsm8k")
    diff.only.click()
    assert diff.visible_fields() == every


def test_saved_views_come_back_named_in_a_new_history(history, qtbot):
    history.search.setText("ngram")
    history.combos["workload"].setCurrentText("gsm8k")
    history.view.sortByColumn(9, Qt.DescendingOrder)
    history.views.save("failed ngram on gsm8k")
    history.search.clear()
    history.combos["workload"].setCurrentText("(any)")
    assert len(history.visible_run_ids()) == 6
    # Another page (the app opened again) lists the view; choosing it brings search, filter and sort back.
    again = HistoryPage()
    qtbot.addWidget(again)
    again.load(history.db_path)
    qtbot.waitUntil(lambda: not again.reading and again.model.rowCount() == 6, timeout=10000)
    combo = again.views.combo
    assert combo.findText("failed ngram on gsm8k") > 0
    combo.setCurrentIndex(combo.findText("failed ngram on gsm8k"))
    combo.activated.emit(combo.currentIndex())
    assert again.search.text() == "ngram" and again.combos["workload"].currentText() == "gsm8k"
    assert again.view.header().sortIndicatorSection() == 9
    assert again.view.header().sortIndicatorOrder() == Qt.DescendingOrder
    assert again.visible_run_ids() == [history.ids["second", "ngram-2"]]
    again.views.delete_button.click()
    assert again.views.combo.findText("failed ngram on gsm8k") < 0


def test_a_saved_view_edited_by_hand_keeps_what_still_reads():
    assert history_views.saved_view(["not", "a", "view"]) is None
    damaged = {"search": 3, "filters": ["method"], "sort_column": "9", "sort_order": True}
    assert history_views.saved_view(damaged) == history_views.SavedView()
    kept = {"search": "ngram", "filters": {"workload": "gsm8k"}, "sort_column": 9, "sort_order": 1}
    assert history_views.saved_view(kept) == history_views.SavedView(search="ngram", filters={"workload": "gsm8k"},
                                                                     sort_column=9, sort_order=1)


def test_a_pinned_baseline_is_kept_and_marked(history, qtbot):
    base = history.ids["first", "baseline"]
    history.select_runs([base])
    assert history.pin_button.isEnabled()
    qtbot.mouseClick(history.pin_button, Qt.LeftButton)
    assert f"run {base}" in history.pinned.text() and history.pin_button.text() == "Unpin baseline"
    again = HistoryPage()
    qtbot.addWidget(again)
    again.load(history.db_path)
    qtbot.waitUntil(lambda: not again.reading and again.model.rowCount() == 6, timeout=10000)
    assert f"run {base}" in again.pinned.text()
    first = again.proxy.index(0, 0)
    assert again.proxy.index(0, 0, first).data() == f"{base} ◆"
    again.select_runs([base])
    again.pin_button.click()
    assert again.pinned.text() == "" and again.proxy.index(0, 0, first).data() == str(base)


def test_a_failed_run_redone_keeps_its_failed_attempt_beside_the_redo(tmp_path, qtbot):
    path = tmp_path / "results.sqlite"
    ids = two_sweeps(path)
    failed = ids["second", "ngram-2"]
    db = store.open_db(path)
    db["runs"].update(failed, {"log_tail": "CUDA out of memory"})
    # The sweep run again (a resume): the failed run is registered anew and redone under its id.
    again = store.Recorder(db).register_runs(2, KEYS, lambda i: {})
    assert again["ngram-2"] == failed and store.run(db, failed).status == "pending"
    attempts = [r for r in store.runs(db) if r.redone_by == failed]
    assert len(attempts) == 1
    attempt = attempts[0]
    assert (attempt.status, attempt.error, attempt.log_tail) == ("failed", "server died", "CUDA out of memory")
    assert attempt.experiment_id == 2 and attempt.method == "ngram"
    # The experiment's own rows, which the sweep and Compare count, are what they were.
    assert [r.id for r in store.runs_of_experiment(db, 2)] == [ids["second", k] for k in KEYS]
    assert store.status_counts(db, 2) == {"completed": 2, "pending": 1}
    store.close(db)

    page = HistoryPage()
    qtbot.addWidget(page)
    page.load(path)
    qtbot.waitUntil(lambda: not page.reading and page.model.rowCount() == 7, timeout=10000)
    second = page.proxy.index(1, 0)
    shown = [page.proxy.index(j, 0, second).data() for j in range(page.proxy.rowCount(second))]
    assert shown == [str(ids["second", "baseline"]), str(failed), str(attempt.id), str(ids["second", "draft_model-3"])]
    assert page.proxy.index(2, 1, second).data() == f"failed (redone: run {failed})"


def test_ctrl_enter_in_the_notes_saves_them(history, qtbot):
    run_id = history.ids["first", "baseline"]
    history.select_runs([run_id])
    history.activateWindow()
    history.notes.notes.setFocus()
    qtbot.keyClicks(history.notes.notes, "slow warmup")
    qtbot.keyClick(history.notes.notes, Qt.Key_Return, Qt.ControlModifier)
    qtbot.waitUntil(lambda: not history.reading and history.model.row(0).notes == "slow warmup", timeout=10000)
