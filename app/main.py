"""The main window: Experiment, Live, History, Compare, Models and Train pages, menus, settings,
and the sweep in progress."""

from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QIcon
from PySide6.QtWidgets import (QAbstractButton, QApplication, QFileDialog, QLabel, QMainWindow, QMenu, QMessageBox,
                               QTabWidget)

from app import menus
from app.exports import ExportError
from app.widgets import theme, wheel_guard
from app.widgets.demo_bar import QUICK, DemoBar
from app.widgets.demo_build import DemoBuild
from app.pages.compare_page import ComparePage
from app.pages.experiment import ExperimentPage
from app.pages.history import HistoryPage
from app.pages.live import LivePage
from app.pages.models_page import ModelsPage
from app.jobs import results_file, worker
from app.jobs.sweep import Sweep
from app.pages.train_page import TrainPage
from app.remote_run import RemoteRun
from app.rerun import Rerun
from workbench import __version__, events, paths, plan, store
from workbench.usecases import host_facts

DEMO_PLAN = QUICK  # the first plan a new user sees; the full demo is one click away
MAX_RECENT = 8


def settings() -> QSettings:
    return QSettings(str(paths.config_dir() / "draftbench.ini"), QSettings.Format.IniFormat)


def _probe(vllm: host_facts.VllmInstall | None) -> tuple[host_facts.VllmInstall, set[str]]:
    install = vllm or host_facts.probe_vllm()
    return install, host_facts.optional_modules(install)


class MainWindow(QMainWindow):
    """`engine_probed` once the vLLM environment has answered (it is asked off the GUI thread:
    the window opens at once and the Run button waits for the answer)."""

    engine_probed = Signal(object)
    recent_menu: QMenu  # File > Recent databases, made by menus.build

    def __init__(self, db_path: Path | None = None, vllm: host_facts.VllmInstall | None = None) -> None:
        super().__init__()
        wheel_guard.install()
        self.settings = settings()
        self.setWindowTitle(f"Draftbench {__version__}")
        self.resize(1360, 880)
        geometry = self.settings.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        # Not found until the probe answers, so nothing can start against an unknown vLLM.
        self.vllm = host_facts.VllmInstall(host_facts.default_python(), "?", None, None, None, None, None)
        self.probing = True
        self.sweep: Sweep | None = None
        self.db_path = Path(db_path or str(self.settings.value("db/last", str(paths.default_db()))))

        self.experiment = ExperimentPage(self.vllm, set())
        self.live = LivePage()
        self.history = HistoryPage()
        self.compare = ComparePage()
        self.models = ModelsPage()
        self.train = TrainPage()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.experiment, "Experiment")
        self.tabs.addTab(self.live, "Live")
        self.tabs.addTab(self.history, "History")
        self.tabs.addTab(self.compare, "Compare")
        self.tabs.addTab(self.models, "Models")
        self.tabs.addTab(self.train, "Train")
        self.setCentralWidget(self.tabs)

        self.experiment.run_requested.connect(self.start_sweep)
        self.live.stop_requested.connect(self.stop_sweep)
        self.history.open_in_live.connect(self.open_run)
        self.history.compare.connect(self.compare_runs)
        self.history.pinned_changed.connect(lambda _: self.compare.repin())
        self.experiment.demos.chosen.connect(self.load_demo)
        worker.run(host_facts.detect_gpus, self.live, self.live.set_host_gpus)
        self.models.new_experiment.connect(self.new_experiment)
        self.train.evaluate.connect(self.evaluate_draft)
        self.remote_run = RemoteRun(self, self.experiment)
        self.rerun = Rerun(self)
        self.compare.baseline_note.run_again.connect(self.rerun.baseline_again)
        self.demo_build = DemoBuild(self, self.experiment)  # started by main() once the window shows
        menus.build(self)

        last_plan = self.settings.value("plan/last")
        self.experiment.set_document(_read_plan_doc(DEMO_PLAN))
        if last_plan and Path(last_plan).exists():
            try:
                self.experiment.load_file(Path(last_plan))
            except plan.PlanError as exc:
                # A plan file changed or damaged since the last session: the demo plan stays.
                self.statusBar().showMessage(str(exc), 10000)
        self.opening: Path | None = None  # a results file being opened and checked
        self._latest = worker.Latest()  # reads of the latest experiment (show_latest): only the newest is shown
        self.set_database(self.db_path)
        self.engine_label = QLabel("checking vLLM…")
        self.statusBar().addPermanentWidget(self.engine_label)
        if vllm is not None and vllm.modules is not None:
            self._probed((vllm, host_facts.optional_modules(vllm)))  # already probed: nothing left to ask
        else:
            worker.run(lambda: _probe(vllm), self, self._probed)
        QTimer.singleShot(0, self.reattach)

    def _probed(self, found: tuple[host_facts.VllmInstall, set[str]]) -> None:
        self.vllm, modules = found
        self.probing = False
        self.experiment.vllm, self.experiment.modules = self.vllm, modules
        self.experiment.methods_table.set_available(modules, self.vllm.python)
        self.experiment.validate()
        self.engine_label.setText(f"vLLM {self.vllm.version} ({self.vllm.build})" if self.vllm.found
                                  else f"vLLM not found in {self.vllm.python}")
        self.engine_probed.emit(self.vllm)

    # --- menus and shortcuts ---------------------------------------------------------------------
    def about(self) -> None:
        vllm = ("checking vLLM…" if self.probing else
                f"vLLM {self.vllm.version} ({self.vllm.build})" if self.vllm.found else "vLLM not found")
        QMessageBox.about(self, "Draftbench", f"Draftbench {__version__}\nSpeculative-decoding workbench\n{vllm}")

    # --- files ---------------------------------------------------------------------------------------
    def open_plan(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open plan", str(Path.cwd()), "Plans (*.toml)")
        if path:
            try:
                self.experiment.load_file(Path(path))
                self.settings.setValue("plan/last", path)
            except plan.PlanError as exc:
                QMessageBox.warning(self, "Open plan", str(exc))

    def save_plan(self, ask: bool = False) -> None:
        path = self.experiment.plan_path
        if ask or path is None or DemoBar.is_demo(path):
            chosen, _ = QFileDialog.getSaveFileName(self, "Save plan", str(Path.cwd() / "plan.toml"), "Plans (*.toml)")
            if not chosen:
                return
            path = Path(chosen)
        try:
            self.experiment.save_file(path)
            self.settings.setValue("plan/last", str(path))
            self.statusBar().showMessage(f"Saved {path}", 5000)
        except (OSError, plan.PlanError) as exc:
            QMessageBox.warning(self, "Save plan", str(exc))

    def open_db(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open results database", str(paths.data_dir()),
                                              "Draftbench databases (*.sqlite *.db);;All files (*)")
        if path:
            self.set_database(Path(path))

    def set_database(self, path: Path) -> None:
        """Opens a results database: an existing file is opened for writing once (so an older schema
        is migrated before the read-only views use it) and checked (quick_check reads every page)
        off the GUI thread; the window switches to it when it is found sound."""
        self.opening = path
        if not path.exists():
            self._database_sound(path)
            return
        worker.run(lambda: results_file.check_database(path), self, lambda _: self._database_sound(path),
                   lambda exc: self._database_refused(path, exc))

    def _database_refused(self, path: Path, exc: BaseException) -> None:
        if path != self.opening:
            return  # another file was asked for meanwhile
        self.opening = None
        QMessageBox.warning(self, "Open results database", str(exc))
        if path == self.db_path:  # the file the app started on: its preflight says why, Run stays off
            self.experiment.db_path = path
            self.experiment.validate()
            self.statusBar().showMessage(f"Results database unusable: {exc}")

    def _database_sound(self, path: Path) -> None:
        if path != self.opening:
            return
        self.opening = None
        self.db_path = path
        self.experiment.db_path = path
        self.experiment.validate()
        self.settings.setValue("db/last", str(path))
        recent = [str(path)] + [p for p in menus.recent_databases(self.settings) if p != str(path)]
        self.settings.setValue("db/recent", recent[:MAX_RECENT])
        menus.update_recent(self)
        self.live.follow(path)
        self.refresh_history()
        self.show_latest()
        self.statusBar().showMessage(f"Results database: {path}")

    def refresh_history(self) -> None:
        self.history.load(self.db_path)

    def show_latest(self, from_live: bool = False) -> None:
        """The latest experiment on the Compare page, so what was just run is there without a detour;
        read off the GUI thread. Only the newest ask is shown: an older read answering last is
        dropped. `from_live` (a sweep's end): the Live page turns to Compare once the runs are in."""
        db_path = self.db_path
        self._latest.run(lambda: results_file.latest_runs(db_path), self, lambda rows: self._latest_read(db_path, rows, from_live),
                         self._latest_failed)

    def _latest_read(self, db_path: Path, rows: list[store.RunRecord], from_live: bool) -> None:
        self.compare.set_runs(rows, db_path)
        if from_live and rows and self.tabs.currentWidget() is self.live:
            self.tabs.setCurrentWidget(self.compare)

    def _latest_failed(self, exc: BaseException) -> None:
        if not isinstance(exc, (ExportError, store.StoreError, store.DatabaseError)):
            sys.excepthook(type(exc), exc, exc.__traceback__)  # a fault of the app's own, which its hook reports
            return
        # A file damaged (or locked) since it was opened: said, never raised.
        self.compare.set_runs([], None)
        reason = store.explain(exc) if isinstance(exc, store.DatabaseError) else str(exc)
        self.statusBar().showMessage(f"Results database unusable: {reason}")

    def load_demo(self, path: Path) -> None:
        self.experiment.set_document(_read_plan_doc(path))
        self.experiment.plan_path = None
        self.tabs.setCurrentWidget(self.experiment)

    def compare_runs(self, rows: list[store.RunRecord]) -> None:
        self._latest.drop()  # chosen in History: a latest experiment still being read is not shown over it
        self.compare.set_runs(rows, self.db_path)
        self.tabs.setCurrentWidget(self.compare)

    def new_experiment(self, doc: dict[str, Any]) -> None:
        self.experiment.set_document(doc)
        self.experiment.plan_path = None
        self.tabs.setCurrentWidget(self.experiment)

    def evaluate_draft(self, plan_path: str) -> None:
        """One click from the Train page: the draft's evaluation plan (baseline vs the draft over N)
        in the Experiment form, run at once."""
        if self.sweep is not None:
            QMessageBox.information(self, "Evaluate draft", "A sweep is running: evaluate the draft when it ends "
                                    "(or stop it first, Ctrl+.).")
            return
        try:
            self.experiment.load_file(Path(plan_path))
        except plan.PlanError as exc:
            QMessageBox.warning(self, "Evaluate draft", str(exc))
            return
        self.settings.setValue("plan/last", plan_path)
        self.tabs.setCurrentWidget(self.experiment)
        self.experiment.request_run()

    def open_run(self, run_id: int) -> None:
        self.live.show_run(self.db_path, run_id)
        self.tabs.setCurrentWidget(self.live)

    # --- the sweep ---------------------------------------------------------------------------------------
    def run_remote(self) -> None:
        self.remote_run.ask()

    def start_sweep(self, p: plan.Plan, text: str, again: bool = False, add_repeats: int = 0) -> None:
        if self.sweep is not None or (not again and not add_repeats and self.rerun.intercepts(p, text)):
            return
        folder = paths.data_dir() / "plans"
        folder.mkdir(parents=True, exist_ok=True)
        plan_file = folder / f"{p.name}-{time.strftime('%Y%m%d-%H%M%S')}.toml"
        plan_file.write_text(self.experiment.text_for_run())
        self.start_file(plan_file, remote=self.experiment.run_remote, ray=self.experiment.profile_form.ray_address(),
                        again=again, add_repeats=add_repeats)

    def start_file(self, plan_file: Path, remote: str | None = None, ray: str | None = None,
                   again: bool = False, add_repeats: int = 0) -> None:
        try:
            sweep = Sweep.start(str(plan_file), str(self.db_path), self, remote=remote, ray=ray, again=again,
                                add_repeats=add_repeats)
        except OSError as exc:
            QMessageBox.critical(self, "Run sweep", str(exc))
            return
        self._follow(sweep)
        self.tabs.setCurrentWidget(self.live)

    def _follow(self, sweep: Sweep) -> None:
        self.sweep = sweep
        self.live.follow(self.db_path)
        sweep.event_read.connect(self.live.on_event)
        sweep.event_read.connect(self._on_event)
        sweep.ended.connect(self._sweep_ended)
        self.experiment.set_running(True)
        self.refresh_history()
        sweep.poll()

    def _on_event(self, event: events.Event) -> None:
        # History reads the runs again when a run's row changes, not on a clock.
        if isinstance(event, (events.SweepStarted, events.RunStarted, events.RunFinished, events.RunFailed,
                              events.SweepFinished)):
            self.refresh_history()
        elif isinstance(event, events.Recommendation):
            self.statusBar().showMessage(f"Adaptive sweep: {event.message}", 60000)

    def _sweep_ended(self) -> None:
        self.experiment.demos.refresh()  # the tooltips' durations, from what this sweep's servers took
        sweep, self.sweep = self.sweep, None
        if sweep is not None:
            sweep.close_row(self.db_path)
        self.experiment.set_running(False)
        self.refresh_history()
        self.show_latest(from_live=True)
        failure = sweep.failure() if sweep else None
        if failure:
            QMessageBox.warning(self, "Sweep", failure)

    def stop_sweep(self) -> None:
        if self.sweep is not None:
            self.sweep.stop()
            self.statusBar().showMessage("Stopping the sweep: shutting its vLLM server down…")

    def reattach(self) -> None:
        """Follow a sweep that an earlier session of the app left running on this database."""
        if self.sweep is not None or not self.db_path.exists():
            return
        try:
            db = store.open_db(self.db_path, readonly=True)
        except store.StoreError:
            return
        try:
            active = store.active_sweeps(db)
        finally:
            store.close(db)
        if active and active[0].pid is not None and active[0].events_path and Path(active[0].events_path).exists():
            self._follow(Sweep(active[0].pid, Path(active[0].events_path), parent=self))
            self.tabs.setCurrentWidget(self.live)
            self.statusBar().showMessage(f"Reattached to the sweep in progress (runner pid {active[0].pid})")

    def ask_close(self) -> str:
        """'stop', 'keep' or 'cancel' when a sweep is running (a separate method so tests can answer)."""
        box = QMessageBox(QMessageBox.Icon.Question, "A sweep is running",
                          "A sweep is running. Stop it, or keep it running and reattach when Draftbench opens again?",
                          parent=self)
        stop = box.addButton("Stop sweep", QMessageBox.ButtonRole.DestructiveRole)
        keep = box.addButton("Keep running", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        answers: dict[QAbstractButton, str] = {stop: "stop", keep: "keep"}
        return answers.get(box.clickedButton(), "cancel")

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        if self.sweep is not None and self.sweep.alive:
            answer = self.ask_close()
            if answer == "cancel":
                event.ignore()
                return
            if answer == "stop":
                self.sweep.stop()
        self.models.shutdown()
        # Training is cancelled, not left orphaned: its finished steps are kept and Start resumes.
        self.train.shutdown()
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.sync()
        event.accept()


def _read_plan_doc(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def main(db: str | None = None, smoke_test: bool = False) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Draftbench")
    app.setOrganizationName("Draftbench")
    QApplication.setWindowIcon(QIcon(str(paths.resources_dir() / "icons" / "draftbench.svg")))
    theme.apply()
    worker.collect_on_gui_thread()
    window = MainWindow(Path(db) if db else None)
    window.show()
    if not smoke_test:
        window.demo_build.start()
    if smoke_test:
        def report() -> None:
            tabs = [window.tabs.tabText(i) for i in range(window.tabs.count())]
            print(f"main window: {window.windowTitle()} visible={window.isVisible()} tabs={','.join(tabs)} "
                  f"commands={window.experiment.commands.toPlainText().count('vllm serve')}", flush=True)
            app.quit()

        QTimer.singleShot(500, report)
    code = app.exec()
    # A probe or host check still running is let finish (briefly), not torn down mid-call.
    worker.wait(10000)
    return code
