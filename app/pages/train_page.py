"""The Train page: train an EAGLE-3 or DFlash draft for a target from the target's own responses,
watch each step and the loss curve live, cancel, resume, and evaluate the draft in one click.

The work runs as `draftbench train` in a child process (the same pipeline as the command line);
the page follows its JSON-line events file. Stopping sends SIGTERM: the pipeline stops its
subprocess or server and keeps every finished step, so Start on the same folder resumes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QMessageBox, QProgressBar, QPushButton, QSplitter,
                               QVBoxLayout, QWidget)

from app.jobs.child import Child
from app.widgets.train_form import TrainForm
from app.widgets.train_view import STEP_TITLES, StepList, TrainCharts, detail
from workbench import events
from workbench.usecases import children, training


class TrainPage(QWidget):
    """Emits `evaluate(plan_path)` when the user asks to sweep the new draft against the baseline."""

    evaluate = Signal(str)
    finished = Signal(str)   # "done", "cancelled" or "failed"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.child: Child | None = None
        self.curve = training.LossCurve()
        self._cancelling = False
        self.summary: dict[str, Any] | None = None
        # One redraw for all the training steps that arrived together (a poll reads them in a batch).
        self._redraw = QTimer(self, singleShot=True, interval=0)
        self._redraw.timeout.connect(self._draw_curve)

        self.form = TrainForm()
        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Start, or resume the run in the output folder (Ctrl+Return)")
        self.start_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop after saving what is finished; Start resumes (Esc)")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        self.evaluate_button = QPushButton("Evaluate against baseline")
        self.evaluate_button.setToolTip("Load the evaluation plan (baseline vs the new draft over N) and run it")
        self.evaluate_button.clicked.connect(self._evaluate)
        self.evaluate_button.setEnabled(False)
        self.open_button = QPushButton("Open folder")
        self.open_button.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(self.form.out.text())))
        buttons = QHBoxLayout()
        for b in (self.start_button, self.cancel_button, self.evaluate_button, self.open_button):
            buttons.addWidget(b)
        left = QVBoxLayout()
        left.addWidget(self.form)
        left.addLayout(buttons)
        left.addStretch(1)
        left_widget = QWidget()
        left_widget.setLayout(left)

        self.steps = StepList()
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m")
        self.status = QLabel("Choose a target and prompts, then Start.")
        self.status.setWordWrap(True)
        self.charts = TrainCharts()
        self.export_button = QPushButton("Export charts…")
        self.export_button.clicked.connect(self.export_charts)
        right = QVBoxLayout()
        right.addWidget(self.steps)
        right.addWidget(self.progress)
        right.addWidget(self.status)
        right.addWidget(self.charts, 1)
        right.addWidget(self.export_button)
        right_widget = QWidget()
        right_widget.setLayout(right)

        split = QSplitter()
        split.addWidget(left_widget)
        split.addWidget(right_widget)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(split)

        QShortcut(QKeySequence("Ctrl+Return"), self, self.start)
        QShortcut(QKeySequence("Escape"), self, self.cancel)
        self.form.folder_changed.connect(self.show_folder)
        self.show_folder()

    def argv(self, events_path: Path) -> list[str]:
        """The child's `draftbench` arguments, as the `train` parser reads them."""
        return children.train_args(**self.form.options(), events=str(events_path))

    # -- running -------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.child is not None  # until its end has been handled

    def start(self) -> None:
        if self.running:
            return
        if not self.form.out.text().strip():
            QMessageBox.warning(self, "Train", "Choose an output folder.")
            return
        out = Path(self.form.out.text().strip()).expanduser()
        self.form.out.setText(str(out))
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            QMessageBox.warning(self, "Train", f"cannot create the output folder {out}: {exc.strerror}")
            return
        events_path = out / f"events-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        try:
            events_path.touch()
        except OSError as exc:
            QMessageBox.warning(self, "Train", f"cannot write in the output folder {out}: {exc.strerror}")
            return
        # The curve so far (earlier attempts in this folder); this run's steps arrive as events.
        self.curve = training.LossCurve.read(out)
        self._cancelling, self.summary = False, None
        try:
            self.child = Child.launch(self.argv(events_path), events_path, events_path.with_suffix(".stderr.txt"),
                                     Path.cwd(), self)
        except OSError as exc:
            QMessageBox.critical(self, "Train", f"could not start the training process: {exc}")
            return
        self.child.event_read.connect(self.on_event)
        self.child.ended.connect(self._finished)
        self._set_running(True)
        self.status.setText("Starting…")

    def cancel(self) -> None:
        if self.child is None:  # not running
            return
        self._cancelling = True
        self.status.setText("Cancelling: stopping the current step (finished steps are kept)…")
        self.child.stop()  # SIGTERM: the pipeline stops its subprocess or server and exits

    def shutdown(self, wait_ms: int = 90000) -> None:
        """On closing the app: cancel (resumable) and wait for the child to tidy up."""
        if self.child is not None:  # running
            self.cancel()
            self.child.wait(wait_ms / 1000)

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        for w in self.form.inputs():
            w.setEnabled(not running)
        if running:
            self.evaluate_button.setEnabled(False)

    def _finished(self) -> None:
        child, self.child = self.child, None
        if child is None:  # its end was handled already
            return
        code = child.exit_code
        self._set_running(False)
        if self.progress.maximum() == 0:
            # A busy bar (a step without a count yet) animates, a core's wake-ups included, for
            # as long as it is shown: a run that ended mid-step leaves it empty and still.
            self.progress.setRange(0, 1)
            self.progress.reset()
        if self.summary is not None:
            outcome = "done"
            self.status.setText(f"Done: draft {self.summary['checkpoint']} registered as {self.summary['pair']}. "
                                "Evaluate it against the baseline in one click.")
            self.evaluate_button.setEnabled(True)
        elif self._cancelling or code == 130:
            outcome = "cancelled"
            self.status.setText("Cancelled. Finished steps are kept: Start resumes where it stopped.")
        else:
            outcome = "failed"
            err = child.stderr_tail(200)
            lines = [line for line in err.splitlines() if line.startswith("draftbench:")]
            message = (lines[-1] if lines else (err.splitlines()[-1] if err else f"exit status {code}"))
            message = message.removeprefix("draftbench: ")
            self.status.setText(f"Failed: {message}")
            QMessageBox.warning(self, "Train", message)
        for item in self.steps.items.values():
            if item.text(1) == "running":
                item.setText(1, outcome)
        self.start_button.setText("Resume" if training.folder_state(Path(self.form.out.text()))["resumable"] else "Start")
        child.deleteLater()
        self.finished.emit(outcome)

    # -- events --------------------------------------------------------------------------------------
    def on_event(self, e: events.Event) -> None:
        """Updates the step list, the status and the loss curve."""
        name = getattr(e, "step", None)  # a pipeline step's name, or a training step's number
        step = name if isinstance(name, str) and name in self.steps.items else None  # one the list shows
        if isinstance(e, events.StepStarted) and step is not None:
            self.steps.set(step, "running", "")
            self.progress.setRange(0, 0)  # busy until a count arrives
            self.status.setText(STEP_TITLES[step] + "…")
        elif isinstance(e, events.StepSkipped) and step is not None:
            if self.steps.items[step].text(1) != "reused":
                self.steps.set(step, "done earlier")
        elif isinstance(e, events.StepFinished) and step is not None:
            self.steps.set(step, "done", detail(step, e.info))
            self.progress.setRange(0, 1)
            self.progress.setValue(1)
        elif isinstance(e, events.Progress) and step is not None:
            self.progress.setRange(0, int(e.total))
            self.progress.setValue(int(e.done))
            self.steps.set(step, detail=f"{e.done} of {e.total}")
        elif isinstance(e, events.ServerStarting):
            self.status.setText("Starting a vLLM server for the target (this takes a minute on CPU)…")
        elif isinstance(e, (events.TrainStep, events.Validation)):
            self._training(e)
        elif isinstance(e, events.Reused):
            for key in e.steps:
                if key in self.steps.items:
                    self.steps.set(key, "reused", "from " + e.source)
        elif isinstance(e, events.Done):
            self.summary = e.to_json()

    def _training(self, e: events.TrainStep | events.Validation) -> None:
        validation = isinstance(e, events.Validation)
        epochs = self.form.epochs.value()
        text = f"epoch {int(e.epoch or 0) + 1} of {epochs}"
        if isinstance(e, events.TrainStep):
            text += f", step {e.step}"
        if isinstance(e.loss, (int, float)):
            text += f", {'validation ' if validation else ''}loss {e.loss:.3f}"
        self.steps.set("train", detail=text)
        self.status.setText("Training: " + text)
        # Epochs finished out of those asked for (a step count is not known in advance).
        self.progress.setRange(0, epochs)
        self.progress.setValue(min(epochs, int(e.epoch or 0) + validation))
        self.curve.add({"val" if validation else "train": e.metrics or {}})
        self._redraw.start()

    def _draw_curve(self) -> None:
        self.charts.draw(self.curve)

    def show_folder(self) -> None:
        """Shows what the output folder already holds (finished steps, the loss so far)."""
        if self.running:
            return
        text = self.form.out.text().strip()
        state: dict[str, Any] = training.folder_state(Path(text)) if text else {"done": {}, "resumable": False}
        if state.get("config"):
            self.form.load_config(state["config"], state["done"])
        self.steps.show_done(state["done"])
        self.start_button.setText("Resume" if state["resumable"] else "Start")
        finished = "register" in state["done"]
        self.evaluate_button.setEnabled(finished)
        self.summary = None
        if finished:
            reg = state["done"]["register"]
            self.summary = {"plan": reg["plan"], "pair": reg["pair"],
                            "checkpoint": state["done"].get("checkpoint", {}).get("path")}
        self.curve = training.LossCurve.read(Path(text)) if text else training.LossCurve()
        if state.get("error"):
            self.status.setText(state["error"])
        elif state["done"]:
            self.status.setText(f"{len(state['done'])} of {len(training.STEPS)} steps finished in this folder"
                                + (": Resume goes on from there." if state["resumable"] else "."))
        self.charts.draw(self.curve)

    def use_data_of(self, source: Path) -> None:
        self.form.use_data_of(source)

    def _evaluate(self) -> None:
        if self.summary and self.summary.get("plan"):
            self.evaluate.emit(self.summary["plan"])

    def export_charts(self) -> None:
        base, _ = QFileDialog.getSaveFileName(self, "Export charts", str(Path(self.form.out.text()) / "training.png"),
                                              "PNG (*.png);;SVG (*.svg);;PDF (*.pdf)")
        if base:
            self.export_to(Path(base))

    def export_to(self, base: Path) -> list[Path]:
        """The loss chart as BASE and the accuracy chart as BASE-accuracy, same format."""
        try:
            return self.charts.export_to(base)
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Export charts", str(exc))
            return []
