"""The demo model's build at the app's start is shown in the window, step by step, on the worker:
the window stays responsive and the Quick demo button says how long the demo takes here."""

from __future__ import annotations

import threading

from PySide6.QtWidgets import QMainWindow

from app.jobs import worker
from app.widgets.demo_bar import DemoBar
from app.widgets.demo_build import DemoBuild
from workbench.checkpoints import demo

STEPS = ["reading SmolLM2-135M-Instruct.Q4_1.gguf", "writing smollm2-135m-instruct",
         "timing float32 against bf16 on this CPU"]


def test_the_build_shows_its_steps_while_the_window_stays_responsive(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    window.show()
    halfway, release = threading.Event(), threading.Event()

    def builder(progress):   # a stand-in for the build: reports steps, then waits to be let go
        progress(0.05, STEPS[0])
        progress(0.4, STEPS[1])
        halfway.set()
        assert release.wait(30)
        progress(0.98, STEPS[2])
        return "float32"

    build = DemoBuild(window, builder=builder)
    with qtbot.waitSignal(build.finished, timeout=30000) as done:
        assert build.start(force=True)
        assert halfway.wait(30)
        qtbot.waitUntil(lambda: build.steps[:2] == STEPS[:2])   # the GUI thread got them while it built
        assert build.dialog is not None and build.dialog.isVisible()
        assert STEPS[1] in build.dialog.labelText() and build.dialog.value() == 40
        assert STEPS[1] in window.statusBar().currentMessage()
        assert not build.start(force=True)      # one build at a time
        release.set()
    assert done.args == [True] and build.steps == STEPS
    assert build.dialog is None and "ready" in window.statusBar().currentMessage()
    assert worker.wait(10000)


def test_a_failed_build_says_why_in_one_line(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)

    def builder(progress):
        progress(0.05, "reading the GGUF")
        raise demo.DemoModelError("the demo model's package is not installed: run `pip install x`")

    build = DemoBuild(window, builder=builder)
    with qtbot.waitSignal(build.finished, timeout=30000) as done:
        build.start(force=True)
    assert done.args == [False] and build.dialog is None
    message = window.statusBar().currentMessage()
    assert message.startswith("The demo model could not be built: the demo model's package") and "\n" not in message
    assert worker.wait(10000)


def test_the_quick_demo_tooltip_says_what_it_does_and_how_long_here(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("DRAFTBENCH_CACHE_DIR", str(tmp_path))
    bar = DemoBar()
    qtbot.addWidget(bar)
    tip = bar.quick.toolTip()
    assert "n-gram" in tip and "2 server starts and 6 runs" in tip and "rough" in tip
    bar.refresh({str(demo.folder(demo.TARGET)): {"start_s": 48.0, "run_s": 50.0}})
    tip = bar.quick.toolTip()
    assert "about 7 min on this machine" in tip and "48 s a server start" in tip and "rough" not in tip
