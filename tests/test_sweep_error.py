"""A sweep stopped by an error (the database refusing a write, as on a full disk): the runner
puts the one-line reason in the sweep's end event, and the app warns with the event's reason. The
runner is real, its server the vLLM stand-in (tests/helpers/standins/vllm_server.py); `draftbench run`
saying the same line on stderr is tests/test_faults.py's."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from helpers.recorded import ROOT
from workbench import events, launch, plan, store
from workbench.usecases import sweeps

from helpers.standin_sweep import SCRIPT  # noqa: E402
PLAN = """
name = "refused"
[target]
model = "demo:smollm2-135m"
served_name = "smollm2"
enforce_eager = true
[workload]
num_prompts = 2
max_tokens = 16
warmup = 0
concurrency = [1]
temperature = 0.0
"""
DISK_FULL = "the results database cannot be used: disk I/O error (free some disk space, then run the same plan again to resume)"


def test_the_end_event_says_why_the_sweep_stopped(demo_models, vllm_install, tmp_path, monkeypatch):
    monkeypatch.setattr(launch.vllm_cli, "argv", lambda python, args: [sys.executable, str(SCRIPT), *args])

    def full(self, run_id, summary):
        raise sqlite3.OperationalError("disk I/O error")

    # The run's completion is the write refused (the sweep's writer thread applies it).
    monkeypatch.setattr(store.Recorder, "run_completed", full)
    seen: list[events.Event] = []
    with pytest.raises(sqlite3.OperationalError):
        sweeps.run_plan(plan.loads(PLAN), vllm_install, tmp_path / "r.sqlite", seen.append, progress=None)
    end = seen[-1]
    assert isinstance(end, events.SweepFinished) and not end.cancelled
    assert end.error == DISK_FULL and "\n" not in end.error
    assert end.experiment == seen[0].experiment is not None and end.seconds > 0
    # The run whose completion was refused is never announced as finished.
    assert [e.KIND for e in seen].count("run_finished") == 0
    # On the wire it reads back whole, as the app and a remote stream read it.
    assert events.parse(events.dumps(end)) == end


RUNNER = """
import sys
from workbench import events
write = events.Writer.append_to(sys.argv[1])
write(events.SweepStarted(experiment=1, db="r.sqlite", runs=1, pending=1))
if sys.argv[2]:
    write(events.SweepFinished(experiment=1, seconds=2.0, error=sys.argv[2]))
print(sys.argv[3], file=sys.stderr)
"""


@pytest.mark.parametrize("error,stderr,warned", [
    # The event's reason, whatever the runner's stderr ends with.
    (DISK_FULL, "draftbench: a line that is not the reason", DISK_FULL),
    # A runner that stopped before its sweep began sends no end event: its stderr line says why.
    ("", "draftbench: plan file missing.toml not found", "plan file missing.toml not found"),
    ("", "draftbench: warning: a warning is not a failure", None),
])
def test_the_app_warns_with_the_reason_of_the_end_event(qtbot, tmp_path, monkeypatch, vllm_install,
                                                        error, stderr, warned):
    from PySide6.QtWidgets import QMessageBox

    from app.jobs.sweep import Sweep
    from app.main import MainWindow

    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    w = MainWindow(tmp_path / "r.sqlite", vllm_install)
    qtbot.addWidget(w)
    events_path, stderr_path = tmp_path / "sweep.events.jsonl", tmp_path / "sweep.stderr.txt"
    events_path.touch()
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(events_path), error, stderr], stderr=err,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
    w._follow(Sweep(proc.pid, events_path, stderr_path, w, proc))
    qtbot.waitUntil(lambda: w.sweep is None, timeout=30000)
    assert shown == ([warned] if warned else [])
    if error:
        assert w.live.eta.text() == f"sweep failed: {error}"
