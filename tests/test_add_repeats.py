"""More repeats for a finished plan: `draftbench run PLAN --add-repeats K` adds K repeats of every
configuration to the plan's latest experiment, numbered after the highest repeat stored, and runs
only those; the app's finished-plan dialog offers the same beside Run again. Sweeps run on the vLLM
stand-in (tests/helpers/standins); the rows are read back through the store."""

from __future__ import annotations

import hashlib
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from helpers.plans import DRAFT, demo_plan
from helpers.standin_sweep import run_plan
from workbench import plan, store
from workbench.usecases import attempts

SMALL = {"num_prompts": 2, "max_tokens": 16, "concurrency": [1], "repeats": 2}
NEVER = ("draftbench: plan 'more' has never been run in this results database: nothing to add repeats to; "
         "run it first")


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return run_plan(tmp_path, *args)


def _rows(db_path: Path) -> list[dict]:
    db = store.open_db(db_path, readonly=True)
    try:
        return store.runs(db)
    finally:
        store.close(db)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _errors(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if not line.startswith("draftbench: warning:")]


def _record(db_path: Path, p: plan.Plan, runs: list[tuple[plan.Run, str]], attempt: int = 1) -> int:
    """An experiment of `p` as a sweep stores it (the store's own registration), with these runs
    in these statuses; no server involved."""
    p = replace(p, attempt=attempt)
    db = store.open_db(db_path)
    try:
        experiment = store.experiment_for(db, p.name, p.hash, p.text, p.path, {})
        ids = store.Recorder(db).register_runs(experiment, [r.key for r, _ in runs], lambda i: {
            "experiment_id": experiment, "key": runs[i][0].key, "seq": i, "repeat": runs[i][0].repeat,
            "method": runs[i][0].server.method, "n": runs[i][0].server.n, "workload": runs[i][0].workload,
            "concurrency": runs[i][0].concurrency, "status": "pending"})
        with db.conn:
            for r, status in runs:
                db["runs"].update(ids[r.key], {"status": status})
        return experiment
    finally:
        store.close(db)


def _added(db_path: Path, p: plan.Plan, k: int) -> plan.Plan:
    db = store.open_db(db_path, readonly=True)
    try:
        return attempts.add_repeats(p, attempts.latest(p, db), db, k)
    finally:
        store.close(db)


# --- which runs are added ---------------------------------------------------------------------------


def test_added_repeats_are_numbered_after_the_highest_stored_and_keep_the_experiment(tmp_path):
    p = plan.loads(demo_plan("more", methods=[DRAFT], workload=SMALL))
    db = tmp_path / "r.sqlite"
    one = _record(db, p, [(r, "completed") for r in p.runs])
    assert sorted({r.repeat for r in p.runs}) == [1, 2] and len(p.runs) == 4  # baseline and draft, twice each
    added = _added(db, p, 2)
    assert sorted((r.server.method, r.repeat) for r in added.runs) == [
        ("baseline", 3), ("baseline", 4), ("draft_model", 3), ("draft_model", 4)]
    assert added.hash == p.hash  # the same experiment, not a new one
    assert [added.seq(0, r) for r in added.runs] == [4, 5, 6, 7]  # after the experiment's runs
    # Repeats added before count: numbering goes on after them, not after the plan's own repeats.
    _record(db, p, [(r, "completed") for r in added.runs])
    again = _added(db, p, 1)
    assert sorted((r.server.method, r.repeat) for r in again.runs) == [("baseline", 5), ("draft_model", 5)]
    assert {r.key for r in again.runs}.isdisjoint(r.key for r in _rows(db))
    assert {r.experiment_id for r in _rows(db)} == {one}


def test_the_latest_attempt_gets_them_and_only_the_configurations_it_holds(tmp_path):
    p = plan.loads(demo_plan("more", methods=[{"method": "ngram", "n": [2, 4], "options": {
        "prompt_lookup_min": 2, "prompt_lookup_max": 4}}], workload={**SMALL, "repeats": 1}, sweep={"mode": "adaptive"}))
    db = tmp_path / "r.sqlite"
    _record(db, p, [(r, "completed") for r in p.runs])  # attempt 1: every N
    chosen = [r for r in p.runs if r.server.n != 4]     # attempt 2, adaptive: N=4 never chosen
    _record(db, p, [(r, "completed") for r in chosen], attempt=2)
    added = _added(db, p, 1)
    assert added.hash == replace(p, attempt=2).hash
    assert sorted((r.server.method, r.server.n, r.repeat) for r in added.runs) == [("baseline", None, 2),
                                                                                    ("ngram", 2, 2)]
    # Measured as listed: neither the adaptive choice of N nor auto repeats' stopping rule applies.
    assert added.mode == "exhaustive" and added.auto_repeats is None


def test_relaunched_repeats_get_servers_of_their_own(tmp_path):
    p = plan.loads(demo_plan("more", methods=[DRAFT], workload=SMALL, sweep={"relaunch": True}))
    db = tmp_path / "r.sqlite"
    _record(db, p, [(r, "completed") for r in p.runs])
    added = _added(db, p, 2)
    assert sorted((r.server.method, r.repeat, r.server.launch) for r in added.runs) == [
        ("baseline", 3, 3), ("baseline", 4, 4), ("draft_model", 3, 3), ("draft_model", 4, 4)]
    assert len(added.servers()) == 4


@pytest.mark.parametrize("k", [0, 101, -1, True])
def test_a_count_outside_one_to_a_hundred_is_refused(k):
    with pytest.raises(attempts.AddRepeatsError, match="from 1 to 100"):
        attempts.check_count(k)


# --- the CLI, with the stand-in serving ------------------------------------------------------------------


@pytest.mark.usefixtures("demo_models")
def test_add_repeats_runs_only_the_added_runs_in_the_same_experiment(tmp_path):
    (tmp_path / "plan.toml").write_text(demo_plan("more", methods=[DRAFT], workload=SMALL))
    db = tmp_path / "r.sqlite"
    first = _cli(tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    before = _rows(db)
    assert [(r.method, r.repeat, r.status) for r in before] == [
        ("baseline", 1, "completed"), ("baseline", 2, "completed"), ("draft_model", 1, "completed"),
        ("draft_model", 2, "completed")]
    (experiment,) = {r.experiment_id for r in before}

    dry = _cli(tmp_path, "--add-repeats", "2", "--dry-run")  # lists what would be added, stores nothing
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert dry.stdout.splitlines()[0] == (f"add repeats: 4 run(s) added to experiment {experiment} of plan 'more', "
                                          "2 more repeat(s) of each of its 2 configuration(s); only these run")
    listed = [line.strip() for line in dry.stdout.splitlines() if line.startswith("    ")]
    assert listed == ["baseline · builtin · c=1 · #3", "baseline · builtin · c=1 · #4",
                      "draft_model N=2 · builtin · c=1 · #3", "draft_model N=2 · builtin · c=1 · #4"]
    assert _rows(db) == before

    more = _cli(tmp_path, "--add-repeats", "2")
    assert more.returncode == 0, more.stderr[-2000:]
    assert "Traceback" not in more.stderr and "add repeats: 4 run(s) added" in more.stderr
    after = _rows(db)
    assert after[:4] == before  # the stored runs are left exactly as they were
    assert [(r.experiment_id, r.method, r.repeat, r.status) for r in after[4:]] == [
        (experiment, "baseline", 3, "completed"), (experiment, "baseline", 4, "completed"),
        (experiment, "draft_model", 3, "completed"), (experiment, "draft_model", 4, "completed")]
    assert [r.seq for r in after[4:]] == [4, 5, 6, 7] and all(r.output_tok_s for r in after[4:])
    events = [line for line in more.stdout.splitlines() if '"event":"sweep_started"' in line.replace(" ", "")]
    assert len(events) == 1 and '"pending":4' in events[0].replace(" ", "")  # only the added runs ran

    # The plan itself is still complete: a plain run says so and runs nothing.
    done = _cli(tmp_path)
    assert done.returncode == 0 and f"all 4 runs of plan 'more' are complete in {db} (experiment {experiment})" \
        in done.stderr and len(_rows(db)) == 8


@pytest.mark.usefixtures("demo_models")
def test_auto_repeats_plans_are_measured_and_stay_complete(tmp_path):
    workload = {**SMALL, "repeats": "auto", "repeats_max": 2, "repeats_target": 0.5}
    (tmp_path / "plan.toml").write_text(demo_plan("more", workload=workload))
    db = tmp_path / "r.sqlite"
    assert _cli(tmp_path).returncode == 0
    more = _cli(tmp_path, "--add-repeats", "3")
    assert more.returncode == 0, more.stderr[-2000:]
    rows = _rows(db)
    # The added repeats all run: the stopping rule (at most 2 repeats) would skip the third of them.
    assert [(r.repeat, r.status) for r in rows[2:]] == [(3, "completed"), (4, "completed"), (5, "completed")]
    done = _cli(tmp_path)
    assert done.returncode == 0 and _errors(done) and "runs of plan 'more' are complete" in _errors(done)[0]
    assert "not complete" not in more.stderr + done.stderr


def test_never_run_bad_counts_and_again_are_refused_in_one_line(tmp_path):
    (tmp_path / "plan.toml").write_text(demo_plan("more", methods=[DRAFT], workload=SMALL))
    db = tmp_path / "r.sqlite"
    never = _cli(tmp_path, "--add-repeats", "1")  # no database at all: none is created
    assert never.returncode == 2 and _errors(never) == [NEVER] and not db.exists()
    # A database holding another plan's experiment: refused, and the file not written to.
    _record(db, plan.loads(demo_plan("other", methods=[DRAFT], workload=SMALL)), [])
    stored = _digest(db)
    for args in (["--add-repeats", "1"], ["--add-repeats", "1", "--dry-run"]):
        done = _cli(tmp_path, *args)
        assert done.returncode == 2 and _errors(done) == [NEVER], done.stderr
    for k in ("0", "101", "two"):
        done = _cli(tmp_path, "--add-repeats", k)
        assert done.returncode == 2 and done.stderr.strip().splitlines() == [
            f"draftbench run: argument --add-repeats: K must be a whole number from 1 to 100, not {k!r} (see --help)"]
    both = _cli(tmp_path, "--add-repeats", "1", "--again")
    assert both.returncode == 2 and both.stderr.strip().splitlines() == [
        "draftbench run: argument --again: not allowed with argument --add-repeats (see --help)"]
    assert _digest(db) == stored
    assert "Traceback" not in never.stderr + both.stderr


# --- the app ------------------------------------------------------------------------------------------


def _finished_window(qtbot, tmp_path, vllm_install, monkeypatch):
    from app.main import MainWindow

    text = demo_plan("more", methods=[DRAFT], workload=SMALL)
    started: list = []
    monkeypatch.setattr("app.main.Sweep.start", lambda *args, **kwargs: started.append(kwargs) or object())
    w = MainWindow(tmp_path / "r.sqlite", vllm_install)
    qtbot.addWidget(w)
    monkeypatch.setattr(w, "_follow", lambda sweep: None)
    w.experiment.set_document(tomllib.loads(text))
    p = w.experiment.current
    assert p is not None, w.experiment.status.text()
    _record(tmp_path / "r.sqlite", p, [(r, "completed") for r in p.runs])
    return w, p, started


def _answer(keys: list[tuple[Qt.Key, Qt.KeyboardModifier]]) -> list:
    """Answers the next modal dialog from the keyboard once it is up: `keys` typed into its window
    as a person types them (through the window, so mnemonics and the default button work).
    Returns the dialogs it answered."""
    seen: list = []

    def type_into() -> None:
        dialog = QApplication.activeModalWidget()
        if dialog is None or dialog.windowHandle() is None:
            QTimer.singleShot(20, type_into)
            return
        seen.append(dialog)
        dialog.activateWindow()
        for key, modifier in keys:
            QTest.keyClick(dialog.windowHandle(), key, modifier)
        # Keys that did not answer it fail the test in a few seconds instead of leaving it waiting.
        # The dialog is the timer's context: once it is deleted the timer never fires, so it cannot
        # reach a dead object during a later test.
        QTimer.singleShot(5000, dialog, lambda: dialog.isVisible() and dialog.reject())

    QTimer.singleShot(0, type_into)
    return seen


@pytest.mark.usefixtures("demo_models")
def test_the_dialog_adds_repeats_from_the_keyboard(qtbot, tmp_path, vllm_install, monkeypatch):
    from workbench.usecases.children import runner_args
    from app.rerun import Choice, FinishedDialog

    w, p, started = _finished_window(qtbot, tmp_path, vllm_install, monkeypatch)
    # Alt+D to the spin box, 3 typed over its 1, Alt+R: Add repeats… with 3.
    answered = _answer([(Qt.Key_D, Qt.AltModifier), (Qt.Key_A, Qt.ControlModifier), (Qt.Key_3, Qt.NoModifier),
                        (Qt.Key_R, Qt.AltModifier)])
    w.start_sweep(p, w.experiment.text())
    assert len(answered) == 1 and isinstance(answered[0], FinishedDialog)
    assert started == [{"remote": None, "ray": None, "again": False, "add_repeats": 3}]
    assert runner_args("p.toml", "r.sqlite", "e.jsonl", "l.txt", add_repeats=3)[-2:] == ["--add-repeats", "3"]

    # Enter typed in the spin box means its button, not the default Run again.
    started.clear()
    _answer([(Qt.Key_D, Qt.AltModifier), (Qt.Key_Up, Qt.NoModifier), (Qt.Key_Return, Qt.NoModifier)])
    w.start_sweep(p, w.experiment.text())
    assert [kw["add_repeats"] for kw in started] == [2]

    # Escape: nothing starts.
    started.clear()
    _answer([(Qt.Key_Escape, Qt.NoModifier)])
    w.start_sweep(p, w.experiment.text())
    assert started == []

    # What the dialog offers, as a reader of it sees it.
    latest = attempts.latest_at(p, tmp_path / "r.sqlite")
    dialog = FinishedDialog(p, latest, w)
    qtbot.addWidget(dialog)
    assert (dialog.count.value(), dialog.count.minimum(), dialog.count.maximum()) == (1, 1, 100)
    assert "numbered after its highest repeat" in dialog.count.toolTip()
    assert dialog.add.text() == "Add &repeats…" and dialog.again.text() == "Run &again" and dialog.again.isDefault()
    dialog.count.setValue(5)
    dialog.add.click()
    assert dialog.choice == Choice(add_repeats=5) and dialog.result() == dialog.DialogCode.Accepted
