"""Sweep > Run on remote host: asks which host (a saved one, or [user@]host[:port] with
~/.ssh/config's settings), checks it off the GUI thread (SSH may take a while to answer, or to
give up), then has the Experiment page run the plan there."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QInputDialog, QMainWindow, QMessageBox

from app.jobs import worker
from app.pages.experiment import ExperimentPage
from workbench import remote


class RemoteRun:
    """The main window's remote runs: one host check at a time."""

    def __init__(self, window: QMainWindow, experiment: ExperimentPage):
        self.window = window
        self.experiment = experiment
        self.checking = False

    def ask(self) -> None:
        if self.checking:
            return
        saved = sorted(p.stem for p in remote.remotes_dir().glob("*.toml")) if remote.remotes_dir().is_dir() else []
        spec, ok = QInputDialog.getItem(self.window, "Run on remote host",
                                        "Host (saved with `draftbench remote save`, or [user@]host[:port]):",
                                        saved, 0, True)
        if not ok or not spec.strip():
            return
        spec = spec.strip()
        self.checking = True
        self.window.statusBar().showMessage(f"Checking {spec}…")
        worker.run(lambda: remote.check(remote.RemoteHost.parse(spec), timeout=60), self.window,
                   lambda info: self._checked(spec, info), self._failed)

    def _checked(self, spec: str, info: dict[str, Any]) -> None:
        self.checking = False
        gpus = ", ".join(g["name"] for g in info["gpus"]) or "no GPU"
        self.window.statusBar().showMessage(f"{spec}: Draftbench {info['version']}, {info['accelerator']}: {gpus}",
                                            10000)
        self.experiment.request_run(remote=spec)

    def _failed(self, exc: BaseException) -> None:
        # A RemoteError says what went wrong in one line; anything else is named by its type.
        self.checking = False
        self.window.statusBar().clearMessage()
        QMessageBox.warning(self.window, "Run on remote host", str(exc) or type(exc).__name__)
