"""Running a plan again from the window. Run on a plan whose runs are all complete would run
nothing (the runner resumes the plan's latest experiment), so the window asks instead whether to
run it again as a new experiment (the runner's --again), and starts nothing otherwise. Compare's
"Run the baseline again" resumes a stored experiment: its failed baseline first, then the runs
that waited."""

from __future__ import annotations

from PySide6.QtWidgets import QMainWindow, QMessageBox

from workbench import plan, store
from workbench.usecases import attempts, sweeps


class Rerun:
    """The main window's runs of a plan again: a finished one, or a stored experiment's."""

    def __init__(self, window: QMainWindow):
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
        if self.ask(p, latest):
            w.start_sweep(p, text, again=True)
        return True

    def ask(self, p: plan.Plan, latest: attempts.Latest) -> bool:
        """Whether to run the finished plan again (separate so tests can answer)."""
        box = QMessageBox(QMessageBox.Information, "Run sweep",
                          f"All {latest.total} runs of plan “{p.name}” are complete in this results database "
                          f"(experiment {latest.experiment}): Run has nothing left to run.", parent=self.window)
        box.setInformativeText("Run again records a new experiment from the same plan, every run from the start "
                               "(`draftbench run PLAN --again`); the finished experiment stays as it is.")
        again = box.addButton("Run again", QMessageBox.AcceptRole)
        again.setToolTip("Start the plan as a new experiment: every run measured again")
        box.addButton(QMessageBox.Cancel)
        box.setDefaultButton(again)
        box.exec()
        return box.clickedButton() is again

    def baseline_again(self, experiment_id: int) -> None:
        w = self.window
        if w.sweep is not None:
            QMessageBox.information(w, "Run the baseline again", "A sweep is running: run the baseline again when "
                                    "it ends (or stop it first, Ctrl+.).")
            return
        try:
            plan_file = sweeps.plan_file_of(w.db_path, experiment_id)
        except sweeps.RunError as exc:
            QMessageBox.warning(w, "Run the baseline again", str(exc))
            return
        w.start_file(plan_file)
