"""A sweep's end, however it ends: the runner the app started is reaped (no zombie left until the
app quits) and its sweep row closed, nothing pending in it. The runner is real (`draftbench run`
started by the app's Run button) on the quick demo plan; its vLLM environment is a stand-in whose
`vllm serve` exits at once, so each of its servers fails in a moment."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.main import MainWindow
from workbench import store


def _state(pid: int) -> str | None:
    """The process's state letter ('Z': a zombie nobody reaped), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return None


def _window(qtbot, tmp_path, monkeypatch, vllm_install, serve: str):
    """The app, its runner's `vllm serve` running the shell line `serve` instead of a server."""
    stand_in = tmp_path / "vllm_python"
    stand_in.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ] && [ "$3" = "serve" ]; then {serve}; fi\n'
                        f'exec "{sys.executable}" "$@"\n')
    stand_in.chmod(0o755)
    monkeypatch.setenv("DRAFTBENCH_VLLM_PYTHON", str(stand_in))  # the runner's vLLM environment
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: QMessageBox.Ok)
    w = MainWindow(tmp_path / "r.sqlite", vllm_install)
    w.ask_close = lambda: "stop"
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    page = w.experiment
    qtbot.waitUntil(lambda: page.run_button.isEnabled(), timeout=10000)
    qtbot.mouseClick(page.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: w.sweep is not None, timeout=5000)
    return w


def _rows_if_any(db_path: Path) -> list[dict]:
    """The sweep rows, none while the runner has not created the file yet."""
    try:
        return _sweep_rows(db_path)
    except (store.StoreError, store.DatabaseError):
        return []


def _sweep_rows(db_path: Path) -> list[dict]:
    db = store.open_db(db_path, readonly=True)
    try:
        return list(db["sweeps"].rows)
    finally:
        store.close(db)


def test_a_finished_runner_is_reaped_and_nothing_is_left_pending(qtbot, tmp_path, monkeypatch, demo_models,
                                                                  vllm_install):
    window = _window(qtbot, tmp_path, monkeypatch, vllm_install, 'echo "no server here" >&2; exit 1')
    sweep = window.sweep
    qtbot.waitUntil(lambda: window.sweep is None, timeout=120000)
    # Reaped by the app while it runs on: the process is gone, not a zombie.
    qtbot.waitUntil(lambda: _state(sweep.pid) is None, timeout=10000)
    assert sweep.proc.returncode == 1 and not sweep.timer.isActive()
    [row] = _sweep_rows(window.db_path)
    assert row["runs_total"] == 6 and row["runs_pending"] == 0
    assert row["status"] == "finished" and row["finished"] is not None


def test_a_killed_runner_leaves_no_sweep_in_progress(qtbot, tmp_path, monkeypatch, demo_models, vllm_install):
    # Its first server never answers, so the runner is killed mid-sweep, its row open.
    window = _window(qtbot, tmp_path, monkeypatch, vllm_install, "exec sleep 120")
    sweep = window.sweep
    qtbot.waitUntil(lambda: bool(_rows_if_any(window.db_path)), timeout=60000)
    os.kill(sweep.pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: window.sweep is None, timeout=10000)
    qtbot.waitUntil(lambda: _state(sweep.pid) is None, timeout=10000)
    [row] = _sweep_rows(window.db_path)
    assert row["runs_pending"] == 0 and row["finished"] is not None and row["status"] == "failed"
    assert store.active_sweeps(store.open_db(window.db_path, readonly=True)) == []
