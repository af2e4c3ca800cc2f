"""The main window: Experiment (plan + exact vLLM commands + Run) and History pages."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from PySide6.QtCore import QProcess, QSortFilterProxyModel, Qt, QTimer
from PySide6.QtGui import QAction, QFont, QKeySequence
from PySide6.QtWidgets import (
    QApplication, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QMainWindow, QMessageBox,
    QPlainTextEdit, QProgressBar, QPushButton, QSplitter, QTableView, QTabWidget, QVBoxLayout,
    QWidget,
)

from app.runs_model import SORT_ROLE, RunsModel
from workbench import __version__, engine, launch, paths, plan, store

DEMO_PLAN = paths.resources_dir() / "plans" / "demo.toml"


def runner_command(plan_path: str, db_path: str) -> tuple[str, list[str]]:
    """The runner is `draftbench run` in a child process, so a GUI crash never kills a sweep."""
    return sys.executable, ["-m", "app", "run", plan_path, "--db", db_path]


class ExperimentPage(QWidget):
    def __init__(self, window: "MainWindow"):
        super().__init__()
        self.window_ = window
        self.plan_path: Path | None = None
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.Monospace)

        self.editor = QPlainTextEdit()
        self.editor.setFont(mono)
        self.editor.setToolTip("The experiment plan (TOML). A baseline run is added automatically.")
        self.commands = QPlainTextEdit(readOnly=True)
        self.commands.setFont(mono)
        self.commands.setToolTip("The exact vLLM command of every server this plan launches, with its runs")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.run_button = QPushButton("Run")
        self.run_button.setToolTip("Validate the plan and start the sweep (Ctrl+R)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m runs")
        self.events = QPlainTextEdit(readOnly=True)
        self.events.setFont(mono)
        self.events.setMaximumBlockCount(2000)

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.addWidget(QLabel("<b>Plan</b>"))
        lv.addWidget(self.editor)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.addWidget(QLabel("<b>vLLM commands this plan will launch</b>"))
        rv.addWidget(self.commands, 2)
        rv.addWidget(QLabel("<b>Sweep</b>"))
        rv.addWidget(self.events, 1)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([500, 700])
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.progress, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)
        layout.addLayout(buttons)

        self.validate_timer = QTimer(self, singleShot=True, interval=300)
        self.validate_timer.timeout.connect(self.validate)
        self.editor.textChanged.connect(self.validate_timer.start)
        self.run_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)

        self.process = QProcess(self)
        self.process.readyReadStandardOutput.connect(self._read_events)
        self.process.readyReadStandardError.connect(self._read_stderr)
        self.process.finished.connect(self._finished)

    def load_file(self, path: Path) -> None:
        self.plan_path = path
        self.editor.setPlainText(path.read_text())
        self.validate()

    def validate(self) -> plan.Plan | None:
        base = self.plan_path.parent if self.plan_path else Path.cwd()
        try:
            p = plan.loads(self.editor.toPlainText(), path=str(self.plan_path or "plan.toml"), base=base)
        except plan.PlanError as exc:
            self.status.setText(f"<span style='color:#c0392b'>Plan error: {exc}</span>")
            self.commands.setPlainText("")
            self.run_button.setEnabled(False)
            return None
        vllm = self.window_.vllm
        lines = []
        for server, runs in p.servers():
            lines.append(launch.prepare(server, vllm, 0).command.replace("--port 0", "--port PORT"))
            lines += [f"    {r.label}" for r in runs]
        self.commands.setPlainText("\n".join(lines))
        where = "vLLM " + (f"{vllm.version} ({vllm.build} build)" if vllm.found else "not found: runs cannot start")
        self.status.setText(f"{len(p.runs)} runs on {len(p.servers())} server configurations · {where}")
        self.run_button.setEnabled(vllm.found and self.process.state() == QProcess.NotRunning)
        return p

    def start(self) -> None:
        p = self.validate()
        if p is None or self.process.state() != QProcess.NotRunning:
            return
        path = self.plan_path
        if path is None or path.read_text() != self.editor.toPlainText() or path == DEMO_PLAN:
            path = paths.data_dir() / "plans" / f"{p.name}.toml"
            path.parent.mkdir(parents=True, exist_ok=True)
            text = self.editor.toPlainText()
            if self.plan_path == DEMO_PLAN:
                # Relative paths in the demo plan are resolved against the packaged plan folder.
                text = text
            path.write_text(text)
        program, args = runner_command(str(path), str(self.window_.db_path))
        self.events.clear()
        self.progress.setRange(0, len(p.runs))
        self.progress.setValue(0)
        self.process.start(program, args)
        self.run_button.setEnabled(False)
        self.stop_button.setEnabled(True)

    def stop(self) -> None:
        if self.process.state() != QProcess.NotRunning:
            self.process.terminate()

    def _read_events(self) -> None:
        while self.process.canReadLine():
            line = bytes(self.process.readLine()).decode(errors="replace").strip()
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "sweep_started":
                self.progress.setRange(0, event["runs"])
                self.progress.setValue(event["runs"] - event["pending"])
            elif kind in ("run_finished", "run_failed"):
                self.progress.setValue(self.progress.value() + 1)
                self.window_.refresh_history()
            if kind != "progress":
                self.events.appendPlainText(_describe(event))

    def _read_stderr(self) -> None:
        text = bytes(self.process.readAllStandardError()).decode(errors="replace").strip()
        if text:
            self.events.appendPlainText(text)

    def _finished(self) -> None:
        self.stop_button.setEnabled(False)
        self.validate()
        self.window_.refresh_history()


def _describe(event: dict) -> str:
    kind = event.get("event")
    if kind == "server_starting":
        return f"starting: {event['command']}"
    if kind == "server_ready":
        return f"server ready after {event['seconds']} s"
    if kind == "run_started":
        return f"run {event['index']}/{event['total']}: {event['label']}"
    if kind == "run_finished":
        mal = f", MAL {event['mal']:.2f}" if event.get("mal") else ""
        return f"finished: {event['label']}: {event['output_tok_s']:.1f} tok/s{mal}"
    if kind == "run_failed":
        return f"FAILED run {event['run']}: {event['error']}"
    return json.dumps(event)


class HistoryPage(QWidget):
    def __init__(self):
        super().__init__()
        self.model = RunsModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.view = QTableView()
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.view.setSelectionBehavior(QTableView.SelectRows)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view)

    def load(self, db_path: Path) -> None:
        if not db_path.exists():
            self.model.set_rows([])
            return
        try:
            db = store.open_db(db_path, readonly=True)
            self.model.set_rows(store.runs(db))
            db.conn.close()
        except store.StoreError:
            self.model.set_rows([])


class MainWindow(QMainWindow):
    def __init__(self, db_path: Path | None = None):
        super().__init__()
        self.setWindowTitle(f"Draftbench {__version__}")
        self.resize(1280, 800)
        self.db_path = Path(db_path or paths.default_db())
        self.vllm = engine.probe()
        self.tabs = QTabWidget()
        self.experiment = ExperimentPage(self)
        self.history = HistoryPage()
        self.tabs.addTab(self.experiment, "Experiment")
        self.tabs.addTab(self.history, "History")
        self.setCentralWidget(self.tabs)
        self._menus()
        self.experiment.load_file(DEMO_PLAN)
        self.refresh_history()
        self.statusBar().showMessage(f"Results database: {self.db_path}")

    def _menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        for text, key, slot in (
            ("&Open plan…", QKeySequence.Open, self.open_plan),
            ("&Open results database…", "Ctrl+Shift+O", self.open_db),
            ("&Quit", QKeySequence.Quit, self.close),
        ):
            action = QAction(text, self, shortcut=key)
            action.triggered.connect(slot)
            file_menu.addAction(action)
        run = QAction("&Run", self, shortcut="Ctrl+R")
        run.triggered.connect(self.experiment.start)
        self.menuBar().addMenu("&Sweep").addAction(run)

    def open_plan(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open plan", str(Path.cwd()), "Plans (*.toml)")
        if path:
            self.experiment.load_file(Path(path))

    def open_db(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open results database", str(paths.data_dir()),
                                              "SQLite (*.sqlite *.db);;All files (*)")
        if path:
            self.db_path = Path(path)
            self.refresh_history()
            self.statusBar().showMessage(f"Results database: {self.db_path}")

    def refresh_history(self) -> None:
        self.history.load(self.db_path)

    def closeEvent(self, event) -> None:
        if self.experiment.process.state() != QProcess.NotRunning:
            answer = QMessageBox.question(self, "Sweep running", "A sweep is running. Stop it and quit?")
            if answer != QMessageBox.Yes:
                event.ignore()
                return
            self.experiment.process.terminate()
            self.experiment.process.waitForFinished(30000)
        event.accept()


def main(db: str | None = None) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Draftbench")
    window = MainWindow(Path(db) if db else None)
    window.show()
    return app.exec()
