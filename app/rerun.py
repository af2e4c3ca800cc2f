"""Running a plan again from the window. Run on a plan whose runs are all complete would run
nothing (the runner resumes the plan's latest experiment), so the window asks instead whether to
run it again as a new experiment (the runner's --again) or to add repeats of every configuration
to that experiment (its --add-repeats K), and starts nothing otherwise. Compare's "Run the baseline
again" resumes a stored experiment: its failed baseline first, then the runs that waited."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QMessageBox, QSpinBox, QVBoxLayout,
                               QWidget)

from app.jobs.sweep import Sweep
from app.pages.experiment import ExperimentPage
from workbench import plan, store
from workbench.usecases import attempts, sweeps


class Window(Protocol):
    """What Rerun reaches of the main window (app.main imports this module, so its class is
    described here rather than imported: no import cycle, even for types)."""
    db_path: Path
    experiment: ExperimentPage
    sweep: Sweep | None

    def window(self) -> QWidget: ...
    def start_sweep(self, p: plan.Plan, text: str, again: bool = False, add_repeats: int = 0) -> None: ...
    def start_file(self, plan_file: Path) -> None: ...


@dataclass(frozen=True)
class Choice:
    """What Run does with a finished plan: a new experiment, or repeats added to its latest one."""
    again: bool = False
    add_repeats: int = 0


class FinishedDialog(QDialog):
    """The question Run asks of a finished plan: Run again, Add repeats… (how many in its spin
    box), or Cancel; `choice` holds the answer (None: Cancel). Every choice has a mnemonic, and the
    spin box one through its label, so the dialog works from the keyboard alone."""

    def __init__(self, p: plan.Plan, latest: attempts.Latest, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Run sweep")
        self.choice: Choice | None = None
        experiment = f"experiment {latest.experiment}"
        text = QLabel(f"All {latest.total} runs of plan “{p.name}” are complete in this results database "
                      f"({experiment}): Run has nothing left to run.")
        info = QLabel("Run again records a new experiment from the same plan, every run from the start "
                      "(`draftbench run PLAN --again`); the finished experiment stays as it is. Add repeats "
                      f"measures every configuration of {experiment} that many more times, in that experiment "
                      "(`draftbench run PLAN --add-repeats K`).")
        for label in (text, info):
            label.setWordWrap(True)
        self.count = QSpinBox()
        self.count.setRange(1, attempts.MAX_ADDED)
        self.count.setValue(1)
        self.count.setToolTip(f"How many more repeats of each configuration to add to {experiment}: they are "
                              "numbered after its highest repeat, only they run, and Compare then pools them with "
                              "the repeats already measured into one mean and interval")
        count_label = QLabel("Repeats to a&dd:")
        count_label.setBuddy(self.count)
        row = QHBoxLayout()
        row.addWidget(count_label)
        row.addWidget(self.count)
        row.addStretch(1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.again = buttons.addButton("Run &again", QDialogButtonBox.ButtonRole.AcceptRole)
        self.again.setToolTip("Start the plan as a new experiment: every run measured again")
        self.add = buttons.addButton("Add &repeats…", QDialogButtonBox.ButtonRole.AcceptRole)
        self.add.setToolTip(self.count.toolTip())
        self.again.setDefault(True)
        self.again.clicked.connect(lambda: self._choose(Choice(again=True)))
        self.add.clicked.connect(lambda: self._choose(Choice(add_repeats=self.count.value())))
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(info)
        layout.addLayout(row)
        layout.addWidget(buttons)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        # Enter in the spin box means the button beside it, not the default Run again: a count just
        # typed must not start a whole new experiment instead.
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.count.hasFocus():
            self.add.click()
            return
        super().keyPressEvent(event)

    def _choose(self, choice: Choice) -> None:
        self.choice = choice
        self.accept()


class Rerun:
    """The main window's runs of a plan again: a finished one, or a stored experiment's."""

    def __init__(self, window: Window) -> None:
        self.window = window

    def intercepts(self, p: plan.Plan, text: str) -> bool:
        """True when Run would do nothing (every run of `p` complete in the window's database): then
        the question is asked here, and a sweep started only as a new experiment."""
        w = self.window
        if w.experiment.run_remote:
            return False  # the host's own database says what is complete there
        try:
            latest = attempts.latest_at(p, w.db_path)
        except store.StoreError:
            return False  # the runner refuses an unusable file itself, in its one line
        if not latest.finished:
            return False
        choice = self.ask(p, latest)
        if choice is not None:
            w.start_sweep(p, text, again=choice.again, add_repeats=choice.add_repeats)
        return True

    def ask(self, p: plan.Plan, latest: attempts.Latest) -> Choice | None:
        """What to do with the finished plan; None: nothing (separate so tests can answer)."""
        dialog = FinishedDialog(p, latest, self.window.window())  # a top-level window's window() is itself
        dialog.exec()
        return dialog.choice

    def baseline_again(self, experiment_id: int) -> None:
        w = self.window
        if w.sweep is not None:
            QMessageBox.information(w.window(), "Run the baseline again", "A sweep is running: run the baseline again when "
                                    "it ends (or stop it first, Ctrl+.).")
            return
        try:
            plan_file = sweeps.plan_file_of(w.db_path, experiment_id)
        except sweeps.RunError as exc:
            QMessageBox.warning(w.window(), "Run the baseline again", str(exc))
            return
        w.start_file(plan_file)
