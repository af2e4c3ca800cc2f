"""The main window's menus and their shortcuts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMenu

from app.widgets.demo_bar import FULL, QUICK

if TYPE_CHECKING:  # the window builds its menus here: imported for its type only
    from app.main import MainWindow


def action(window: MainWindow, menu: QMenu, text: str, shortcut: str | QKeySequence.StandardKey | None,
           slot: Callable[..., object], tip: str = "") -> QAction:
    item = QAction(text, window)
    if shortcut:
        item.setShortcut(QKeySequence(shortcut))
    item.setStatusTip(tip)
    item.triggered.connect(slot)
    menu.addAction(item)
    return item


def build(window: MainWindow) -> None:
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


def update_recent(window: MainWindow) -> None:
    window.recent_menu.clear()
    for path in recent_databases(window.settings):
        item = window.recent_menu.addAction(path)
        item.triggered.connect(lambda _=False, p=path: window.set_database(Path(p)))
    window.recent_menu.setEnabled(not window.recent_menu.isEmpty())
