"""The main window's menus and their shortcuts."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QMenuBar, QTabWidget, QWidget

from app.pages.experiment import ExperimentPage
from app.widgets.demo_bar import FULL, QUICK


class Window(Protocol):
    """What the menus reach of the main window (app.main imports this module, so its class is
    described here rather than imported: no import cycle, even for types)."""
    settings: QSettings
    recent_menu: QMenu
    experiment: ExperimentPage
    tabs: QTabWidget

    def window(self) -> QWidget: ...
    def menuBar(self) -> QMenuBar: ...  # noqa: N802 - Qt's name
    def close(self) -> bool: ...
    def open_plan(self) -> None: ...
    def save_plan(self, ask: bool = False) -> None: ...
    def load_demo(self, path: Path) -> None: ...
    def open_db(self) -> None: ...
    def set_database(self, path: Path) -> None: ...
    def run_remote(self) -> None: ...
    def stop_sweep(self) -> None: ...
    def about(self) -> None: ...


def action(window: Window, menu: QMenu, text: str, shortcut: str | QKeySequence.StandardKey | None,
           slot: Callable[..., object], tip: str = "") -> QAction:
    item = QAction(text, window.window())  # a top-level window's window() is itself
    if shortcut:
        item.setShortcut(QKeySequence(shortcut))
    item.setStatusTip(tip)
    item.triggered.connect(slot)
    menu.addAction(item)
    return item


def build(window: Window) -> None:
    """The File, Sweep, View and Help menus of the main window."""
    f = window.menuBar().addMenu("&File")
    action(window, f, "&Open plan…", QKeySequence.StandardKey.Open, window.open_plan,
           "Load a plan file into the Experiment form")
    action(window, f, "&Save plan", QKeySequence.StandardKey.Save, window.save_plan, "Save the plan")
    action(window, f, "Save plan &as…", "Ctrl+Shift+S", lambda: window.save_plan(ask=True), "Save the plan to a new file")
    action(window, f, "Load the &quick demo plan", None, lambda: window.load_demo(QUICK),
           "Baseline, n-gram and a draft model at two N each: about 5 minutes on 2 CPU cores")
    action(window, f, "Load the &full demo plan", None, lambda: window.load_demo(FULL),
           "Every N of n-gram and the draft model at two concurrencies: 20 runs, about 13 minutes")
    f.addSeparator()
    action(window, f, "Open results &database…", "Ctrl+Shift+O", window.open_db, "Open any Draftbench results database")
    window.recent_menu = f.addMenu("&Recent databases")
    f.addSeparator()
    action(window, f, "&Quit", QKeySequence.StandardKey.Quit, window.close)
    s = window.menuBar().addMenu("&Sweep")
    action(window, s, "&Run", "Ctrl+R", window.experiment.request_run, "Validate the plan and start the sweep")
    action(window, s, "Run on &remote host…", "Ctrl+Shift+R", window.run_remote,
           "Run the plan on a GPU server over SSH; its results stream into this database")
    action(window, s, "&Stop", "Ctrl+.", window.stop_sweep, "Stop the running sweep")
    v = window.menuBar().addMenu("&View")
    for i, name in enumerate(("Experiment", "Live", "History", "Compare", "Models", "Train")):
        action(window, v, name, f"Ctrl+{i + 1}", lambda _=False, i=i: window.tabs.setCurrentIndex(i))
    h = window.menuBar().addMenu("&Help")
    action(window, h, "&About Draftbench", None, window.about)
    update_recent(window)


def recent_databases(settings: QSettings) -> list[str]:
    """The results files opened last, newest first."""
    paths = settings.value("db/recent", [], type=list)
    return [str(p) for p in paths] if isinstance(paths, list) else []


def update_recent(window: Window) -> None:
    window.recent_menu.clear()
    for path in recent_databases(window.settings):
        item = window.recent_menu.addAction(path)
        item.triggered.connect(lambda _=False, p=path: window.set_database(Path(p)))
    window.recent_menu.setEnabled(not window.recent_menu.isEmpty())
