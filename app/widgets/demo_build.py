"""The demo model's build at the app's start, shown in the window: a progress dialog with each step
(reading the GGUF, writing each folder, timing float32 against bf16), run on the app's worker.

Building takes most of a minute on a 2-core CPU; done before the window opened, it left a new user
looking at a terminal (if any) for 39 s. The window now opens at once and says what it is doing."""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMainWindow, QProgressDialog

from app.jobs import worker
from workbench.usecases import demo_model, host_facts

Builder = Callable[[demo_model.Progress], Any]


def build(progress: demo_model.Progress) -> Any:
    """On the worker: the demo model built where missing, then this CPU's dtype measured (once)."""
    demo_model.ensure(progress=progress)
    return host_facts.demo_cpu_choice(measure=False)


def needed() -> bool:
    """Whether the build has anything to do (a few file reads, so it is asked on the GUI thread)."""
    return any(demo_model.status(m) != "ready" for m in demo_model.ALL) or host_facts.demo_cpu_stored() is None


class DemoBuild(QObject):
    """`finished(ok)` once the build has ended; `steps` lists the steps it reported, in order."""

    finished = Signal(bool)

    def __init__(self, window: QMainWindow, experiment: Any = None, builder: Builder = build):
        super().__init__(window)
        self.window = window
        self.experiment = experiment  # the Experiment page, whose demo plan's commands follow the dtype
        self.builder = builder
        self.steps: list[str] = []
        self.dialog: QProgressDialog | None = None
        self.running = False

    def start(self, force: bool = False) -> bool:
        """Starts the build if anything is missing (or `force`); False if there is nothing to do."""
        if self.running or not (force or needed()):
            return False
        self.running = True
        # Only the folders take long enough for a dialog; timing the dtypes is a status line.
        if force or any(demo_model.status(m) != "ready" for m in demo_model.ALL):
            self.dialog = QProgressDialog("Building the demo model (once, about a minute on 2 cores)…",
                                          "", 0, 100, self.window)
            self.dialog.setWindowTitle("Demo model")
            self.dialog.setCancelButton(None)  # a build cut short would only start again next time
            self.dialog.setWindowModality(Qt.WindowModality.NonModal)
            self.dialog.setMinimumDuration(0)
            self.dialog.setAutoClose(False)
            self.dialog.setAutoReset(False)
            self.dialog.show()
        self.window.statusBar().showMessage("Preparing the demo model…")
        worker.run(self.builder, self, self._done, self._failed, self._progress)
        return True

    def _progress(self, fraction: float, message: str) -> None:
        self.steps.append(message)
        line = f"Demo model: {message} ({fraction:.0%})"
        if self.dialog is not None:
            self.dialog.setLabelText(line)
            self.dialog.setValue(int(round(fraction * 100)))
        self.window.statusBar().showMessage(line)

    def _done(self, _choice: Any) -> None:
        self._close()
        self.window.statusBar().showMessage("Demo model ready", 10000)
        if self.experiment is not None:
            # The dtype a demo plan is served in may have just been measured: its commands are made again.
            self.experiment.validate()
            self.experiment.demos.refresh()
        self.finished.emit(True)

    def _failed(self, exc: BaseException) -> None:
        self._close()
        # One line, where the user looks: the demo plans cannot run until it is fixed.
        self.window.statusBar().showMessage(f"The demo model could not be built: {exc}")
        self.finished.emit(False)

    def _close(self) -> None:
        self.running = False
        if self.dialog is not None:
            self.dialog.close()
            self.dialog.deleteLater()
            self.dialog = None
