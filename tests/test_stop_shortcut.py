"""Ctrl+. stops a running sweep from any page, the Live page included: one action owns the
shortcut (two owners of one key make Qt call it ambiguous and fire neither)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.main import MainWindow
from workbench import events


class StoppableSweep:
    """Stands in for the runner's child process: counts the stops asked of it."""

    alive = False  # nothing to ask about when the window closes

    def __init__(self) -> None:
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1


def test_ctrl_period_stops_the_sweep_on_the_live_page(qtbot, tmp_path, vllm_install):
    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    sweep = StoppableSweep()
    w.sweep = sweep  # type: ignore[assignment]
    w.live.on_event(events.SweepStarted(experiment=1, db=str(tmp_path / "results.sqlite"), runs=2, pending=2))
    assert w.live.stop_button.isEnabled()
    w.tabs.setCurrentWidget(w.live)
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=3000)
    qtbot.keyClick(w, Qt.Key_Period, Qt.ControlModifier)
    assert sweep.stops == 1
    # Elsewhere too, the Experiment page's form holding the focus.
    w.tabs.setCurrentWidget(w.experiment)
    w.experiment.name.setFocus()
    qtbot.keyClick(w.experiment.name, Qt.Key_Period, Qt.ControlModifier)
    assert sweep.stops == 2
    w.sweep = None
