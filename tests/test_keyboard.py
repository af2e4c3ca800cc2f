"""The app from the keyboard: Ctrl+. stops a running sweep from any page, the Live page included
(one action owns the shortcut: two owners of one key make Qt call it ambiguous and fire neither),
and Tab walks the Experiment form in the order it reads, its method rows before Run."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.main import MainWindow
from helpers.pages import add_draft_row
from workbench import events


class StoppableSweep:
    """Stands in for the runner's child process: counts the stops asked of it."""

    alive = False  # nothing to ask about when the window closes

    def __init__(self) -> None:
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1


@pytest.fixture
def w(qtbot, tmp_path, vllm_install):
    window = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def test_ctrl_period_stops_the_sweep_on_the_live_page(w, qtbot, tmp_path):
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


def test_tab_reaches_the_method_rows_before_run(w, qtbot):
    page = w.experiment
    w.tabs.setCurrentWidget(page)
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=3000)
    # Two method rows, so the walk shows row-by-row order (the quick demo has one: a second is added).
    add_draft_row(page, qtbot)
    assert len(page.rows) == 2 and page.run_button.isEnabled()
    page.name.setFocus()
    qtbot.waitUntil(page.name.hasFocus, timeout=3000)
    walked = []
    for _ in range(200):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key_Tab)
        focus = QApplication.focusWidget()
        if focus is page.run_button or focus is page.name:
            break
        walked.append(focus)
    assert QApplication.focusWidget() is page.run_button, "Tab went round the form without reaching Run"
    # Every row's fields, in reading order: method, draft, then N and options; row by row.
    fields = [f for row in page.rows for f in (row.method, row.draft, row.n, row.options) if f.isEnabled()]
    assert [f for f in walked if f in fields] == fields
