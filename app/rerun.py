"""Running an experiment's plan again from where its results are shown: Compare's "Run the
baseline again" resumes the experiment (its failed baseline first, then the runs that waited)."""

from __future__ import annotations

from PySide6.QtWidgets import QMainWindow, QMessageBox

from workbench.usecases import sweeps


class Rerun:
    """The main window's runs of a stored experiment's plan."""

    def __init__(self, window: QMainWindow):
        self.window = window

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
