"""Both entry points, `draftbench` (app.entry) and `python -m workbench.cli`, offer every verb,
export and report included, and answer them the same way."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

from helpers.recorded import copy_db

VERBS = ["gui", "doctor", "demo-model", "run", "runs", "show", "workloads", "import-bench", "export-bench",
         "catalog", "new", "what-if", "pull", "models", "train", "remote", "export", "report"]
ENTRY_POINTS = {"draftbench": ["-m", "app"], "workbench.cli": ["-m", "workbench.cli"]}


def _run(entry: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run([sys.executable, *ENTRY_POINTS[entry], *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_help_lists_every_verb_at_both_entry_points():
    helps = {entry: _run(entry, "--help") for entry in ENTRY_POINTS}
    for entry, done in helps.items():
        assert done.returncode == 0, done.stderr
        # A verb's line is indented four spaces; its wrapped help, further.
        listed = [line.split()[0] for line in done.stdout.splitlines() if line[:4] == "    " and line[4:5].strip()]
        assert listed == VERBS, (entry, listed)
    assert helps["draftbench"].stdout == helps["workbench.cli"].stdout


@pytest.mark.parametrize("verb, option", [("export", "--chart"), ("report", "--title")])
def test_export_and_report_help_at_the_core_entry_point(verb, option):
    done = _run("workbench.cli", verb, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: draftbench {verb} ") and option in done.stdout


def test_export_from_the_core_entry_point_draws_like_draftbench(recorded_db, tmp_path):
    db = copy_db(recorded_db, tmp_path / "r.sqlite")
    done = _run("workbench.cli", "export", "--db", str(db), "--out", str(tmp_path / "out"), "--chart", "mal",
                "--format", "png,csv", "--width", "320", "--height", "200")
    assert done.returncode == 0, done.stderr
    assert QImage(str(tmp_path / "out" / "mal.png")).size().toTuple() == (320, 200)
    assert (tmp_path / "out" / "speedup_table.csv").read_text().startswith("target,method,")
    for args, message in ((["--format", "gif"], "draftbench: unknown format 'gif'; choose from png"),
                          (["--runs", "3,x"], "draftbench export: argument --runs: runs are comma-separated")):
        answers = [_run(entry, "export", "--db", str(db), *args) for entry in ENTRY_POINTS]
        for a in answers:
            assert a.returncode == 2 and a.stderr.startswith(message) and "Traceback" not in a.stderr, a.stderr
        assert answers[0].stderr == answers[1].stderr
