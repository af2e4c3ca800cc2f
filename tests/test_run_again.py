"""A finished plan run again: a plain run says in one line that all its runs are complete and how
to run it again, instead of silently doing nothing; `--again` records a new experiment of the same
plan (the vLLM stand-in serves, tests/helpers/standins)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.plans import DRAFT, demo_plan
from helpers.standin_sweep import run_plan
from workbench import plan, store
from workbench.usecases import attempts



def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return run_plan(tmp_path, *args)


def _experiments(db: Path) -> dict[int, list[str]]:
    conn = store.open_db(db, readonly=True)
    try:
        out: dict[int, list[str]] = {}
        for r in store.runs(conn):
            out.setdefault(r.experiment_id, []).append(r.status)
        return out
    finally:
        store.close(conn)


@pytest.mark.usefixtures("demo_models")
def test_a_finished_plan_says_so_and_again_makes_a_new_experiment(tmp_path):
    text = demo_plan("again", methods=[DRAFT], workload={"num_prompts": 2, "max_tokens": 16, "concurrency": [1]})
    (tmp_path / "plan.toml").write_text(text)
    db = tmp_path / "r.sqlite"
    first = _cli(tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    (one,) = _experiments(db)
    assert _experiments(db)[one] == ["completed", "completed"]

    done = _cli(tmp_path)  # everything is complete: one line says so and how to run it again
    assert done.returncode == 0 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("draftbench: warning:")]
    assert lines == [f"draftbench: all 2 runs of plan 'again' are complete in {db} (experiment {one}): nothing to "
                     "run; to run it again as a new experiment: draftbench run plan.toml --again, or to add "
                     "repeats to it: draftbench run plan.toml --add-repeats K"], done.stderr
    assert list(_experiments(db)) == [one]

    dry = _cli(tmp_path, "--again", "--dry-run")  # a dry run stores nothing
    assert dry.returncode == 0 and "attempt 2" in dry.stdout and list(_experiments(db)) == [one]

    again = _cli(tmp_path, "--again")
    assert again.returncode == 0, again.stderr[-2000:]
    runs = _experiments(db)
    (two,) = set(runs) - {one}
    assert runs[two] == ["completed", "completed"] and runs[one] == ["completed", "completed"]
    p = plan.loads(text)
    assert attempts.latest_at(p, db) == attempts.Latest(2, two, 2, 2)
    assert f"(experiment {two})" in _cli(tmp_path).stderr  # a plain run now resumes the latest attempt


def test_the_first_attempt_keeps_the_plain_hash():
    p = plan.loads(demo_plan("again", methods=[DRAFT]))
    from dataclasses import replace
    assert replace(p, attempt=1).hash == p.hash != replace(p, attempt=2).hash


@pytest.mark.usefixtures("demo_models")
def test_the_app_asks_to_run_a_finished_plan_again(qtbot, tmp_path, vllm_install, monkeypatch):
    import tomllib

    from workbench.usecases.children import runner_args
    from app.main import MainWindow
    from app.rerun import Choice

    text = demo_plan("again", methods=[DRAFT], workload={"num_prompts": 2, "max_tokens": 16, "concurrency": [1]})
    (tmp_path / "plan.toml").write_text(text)
    assert _cli(tmp_path).returncode == 0
    started: list = []
    monkeypatch.setattr("app.main.Sweep.start", lambda *args, **kwargs: started.append(kwargs) or object())
    w = MainWindow(tmp_path / "r.sqlite", vllm_install)
    qtbot.addWidget(w)
    monkeypatch.setattr(w, "_follow", lambda sweep: None)
    page = w.experiment
    page.set_document(tomllib.loads(text))
    assert page.current is not None, page.status.text()

    asked: list = []
    w.rerun.ask = lambda p, latest: asked.append(latest) or None  # Cancel: nothing starts
    w.start_sweep(page.current, page.text())
    assert started == [] and asked and asked[0].finished and asked[0].total == 2

    w.rerun.ask = lambda p, latest: Choice(again=True)  # Run again: the runner is started with --again
    w.start_sweep(page.current, page.text())
    assert [kw.get("again") for kw in started] == [True]
    assert runner_args("p.toml", "r.sqlite", "e.jsonl", "l.txt", again=True)[-1] == "--again"
    assert "--again" not in runner_args("p.toml", "r.sqlite", "e.jsonl", "l.txt")
