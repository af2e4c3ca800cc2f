"""The Train page after Cancel: nothing keeps moving. A stand-in for `draftbench train` starts a
step (the page's bar goes busy until a count arrives) and holds there until it is stopped, as the
real one does while its server starts."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt

from app.pages.train_page import TrainPage

# Writes that its first step started, then waits for SIGTERM and exits as a cancelled run does.
STAND_IN = """
import signal, sys, time
from workbench import events
signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
events.Writer.append_to(sys.argv[1])(events.StepStarted(step="prompts"))
time.sleep(60)
"""


def test_cancel_stops_the_busy_bar(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(TrainPage, "argv", lambda self, events_path: [str(events_path)])
    monkeypatch.setattr("app.jobs.child.draftbench_argv", lambda *args: (sys.executable, ["-c", STAND_IN, *args]))
    page = TrainPage()
    qtbot.addWidget(page)
    page.form.out.setText(str(tmp_path / "run"))
    page.show()
    qtbot.waitExposed(page)
    page.start()
    assert page.running
    qtbot.waitUntil(lambda: page.steps.items["prompts"].text(1) == "running", timeout=20000)
    assert page.progress.maximum() == 0  # busy: the step has no count yet
    with qtbot.waitSignal(page.finished, timeout=20000) as ended:
        qtbot.mouseClick(page.cancel_button, Qt.LeftButton)
    assert ended.args == ["cancelled"]
    bar = page.progress
    # An indeterminate bar (its range 0 to 0) animates for as long as it is shown.
    assert not bar.isVisible() or bar.maximum() > bar.minimum(), (bar.minimum(), bar.maximum())
