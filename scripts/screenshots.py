"""Screenshots for docs/: the first run of the app, Compare at 1280x800 and 1920x1080, the report.

Run under a real X server, e.g.  xvfb-run -a -s "-screen 0 2000x1200x24" .venv/bin/python scripts/screenshots.py
It opens the app as a new user would (fresh settings and database: the quick demo plan), presses
Run, and saves the Experiment page, the Live page while the first server starts and mid-run, the
Compare page it lands on (both sizes; the time from Run to a filled Compare page is printed),
the HTML report in headless Chromium, and History.
With `--time-only` it presses Run and times the quick demo to a filled Compare page, taking no
screenshots (the app's CPU during the windows is then its own, stored as app_cpu_s).
With `--compare DB [STEM]` it instead opens a copy of that results database (its latest experiment
is on Compare) and saves docs/STEM-1280.png and docs/STEM-1920.png (default STEM screenshot-compare,
which also writes the report's screenshot; a STEM with "latency" in it shows the All figures table,
latency beside throughput).
With `--what-if DB STEM` it puts every completed run of that database on Compare, gives the what-if
section the room (as a user would drag the splitter when nothing measured is shown) and saves
docs/STEM.png at 1920x1080.
With `--history DB` it opens a copy of that results database on History at 1280x800, selects a
baseline and a speculative run of its latest experiment and shows their diff, differences only
(docs/screenshot-history-diff.png).
With `--train FOLDER` it shows that training folder on the Train page (docs/screenshot-train.png).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtWidgets import QApplication  # noqa: E402


def copy_db(db: Path, to: Path) -> None:
    """A consistent copy through the store (SQLite's online backup): a file copy leaves out what a
    writer's log still holds, such as a sweep that just finished."""
    from workbench import store

    with open(to, "wb") as out:
        store.backup(db, out)


def wait(app: QApplication, predicate, timeout: float) -> None:
    end = time.time() + timeout
    while time.time() < end:
        app.processEvents()
        if predicate():
            return
        time.sleep(0.05)
    raise SystemExit("timed out waiting for the app")


def settle(app: QApplication, seconds: float = 0.5) -> None:
    end = time.time() + seconds
    while time.time() < end:
        app.processEvents()
        time.sleep(0.03)


SIZES = ((1280, 800), (1920, 1080))


def compare_at_both_sizes(app: QApplication, w, stem: str = "screenshot-compare") -> None:
    """The Compare page as it opens (the latest experiment, its fastest configuration chosen) at
    1280x800 and 1920x1080."""
    w.tabs.setCurrentWidget(w.compare)
    for width, height in ((1280, 800), (1920, 1080)):
        w.resize(width, height)
        settle(app)
        w.grab().save(str(ROOT / "docs" / f"{stem}-{width}.png"))


def report_shot(rows: list, db: Path, title: str) -> None:
    """The HTML report as headless Chromium draws it, 1280 px wide."""
    from app.exports import write_report
    from workbench.usecases import compare_view

    report = Path(tempfile.mkdtemp()) / "report.html"
    write_report(compare_view.build(rows, db), report, title)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("the report screenshot needs Chromium (scripts/bootstrap.sh installs it)")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                    f"--screenshot={ROOT / 'docs' / 'screenshot-report.png'}", "--window-size=1280,2600",
                    report.as_uri()], check=True, capture_output=True, timeout=120)


def compare_shots(app: QApplication, db: Path, stem: str = "screenshot-compare") -> None:
    """With a STEM naming latency, the All figures table is shown: latency beside throughput."""
    from app.main import MainWindow

    # A copy: opening a database migrates it to this version's schema, and docs/ keeps them as recorded.
    # Opened by its bare name from the copy's folder, so the status bar names the file, not a folder.
    folder = Path(tempfile.mkdtemp())
    copy_db(db, folder / db.name)
    os.chdir(folder)
    db = Path(db.name)
    w = MainWindow(db)
    w.show()
    # An existing database is opened (and checked) off the GUI thread: Compare fills once it is and
    # its latest experiment is read, and its view is built.
    wait(app, lambda: w.isVisible() and w.opening is None and bool(w.compare.rows) and not w.compare.building, 60)
    if "latency" in stem:
        w.compare.below.setCurrentWidget(w.compare.table)
    compare_at_both_sizes(app, w, stem)
    if stem == "screenshot-compare":
        report_shot(w.compare.rows, db, "Draftbench demo sweep (SmolLM2-135M on 2 CPU cores)")
    w.close()


def what_if_shot(app: QApplication, db: Path, stem: str) -> None:
    from app.main import MainWindow

    from workbench import store

    w = MainWindow(db)
    w.show()
    wait(app, lambda: w.isVisible() and w.opening is None, 60)
    rows = [r for r in store.runs(store.open_db(db, readonly=True)) if r.status == "completed"]
    w.compare_runs(rows)  # as History does: the latest experiment, still being read, is not shown over them
    wait(app, lambda: not w.compare.building, 60)
    w.tabs.setCurrentWidget(w.compare)
    w.resize(1920, 1080)
    settle(app)
    w.compare.split.setSizes([0, 240, 650])
    settle(app, 1.0)
    w.grab().save(str(ROOT / "docs" / f"{stem}.png"))
    w.close()


def history_diff_shot(app: QApplication, db: Path) -> None:
    from app.main import MainWindow

    from PySide6.QtGui import QPainter

    copy = Path(tempfile.mkdtemp()) / db.name  # the app migrates what it opens: the recorded file stays as it is
    copy_db(db, copy)
    w = MainWindow(copy)
    w.resize(1280, 800)
    w.show()
    w.tabs.setCurrentWidget(w.history)
    history = w.history
    wait(app, lambda: w.opening is None and history.model.rowCount() > 0 and not history.reading, 60)
    rows = [h.run for h in history.model._rows]
    latest = max(r.experiment_id for r in rows)
    base = next(r for r in rows if r.experiment_id == latest and r.method == "baseline")
    spec = next(r for r in rows if r.experiment_id == latest and r.method != "baseline"
                and r.concurrency == base.concurrency and r.workload == base.workload)
    history.select_runs([base.id, spec.id])
    diff = history.diff_selected()
    diff.only.setChecked(True)
    diff.resize(860, 560)
    w.statusBar().showMessage(f"Results database: {db.name}")  # not the temporary copy's folder
    settle(app, 1.0)
    # The dialog is a window of its own: drawn over the page where it opens, as a user sees them.
    shot = w.grab()
    painter = QPainter(shot)
    painter.drawPixmap((shot.width() - diff.width()) // 2, (shot.height() - diff.height()) // 2, diff.grab())
    painter.end()
    shot.save(str(ROOT / "docs" / "screenshot-history-diff.png"))
    diff.close()
    w.close()


def train_shot(app: QApplication, folder: Path) -> None:
    from app.main import MainWindow

    from workbench import paths

    w = MainWindow(paths.default_db())  # the app's own default, as a user would see it
    w.resize(1500, 940)
    w.show()
    wait(app, lambda: w.isVisible(), 10)
    w.tabs.setCurrentWidget(w.train)
    w.train.out.setText(str(folder))
    w.train.out.setModified(True)
    w.train.show_folder()
    for _ in range(10):
        app.processEvents()
        time.sleep(0.05)
    w.grab().save(str(ROOT / "docs" / "screenshot-train.png"))
    w.close()


def main() -> None:
    app = QApplication(sys.argv[:1])
    if len(sys.argv) == 3 and sys.argv[1] == "--train":
        from app.widgets import theme

        theme.apply()
        train_shot(app, Path(sys.argv[2]))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--what-if":
        from app.widgets import theme

        theme.apply()
        what_if_shot(app, Path(sys.argv[2]), sys.argv[3])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--history":
        from app.widgets import theme

        theme.apply()
        history_diff_shot(app, Path(sys.argv[2]))
        return
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--compare":
        from app.widgets import theme

        theme.apply()
        compare_shots(app, Path(sys.argv[2]), *sys.argv[3:])
        return
    first_run(app, shots="--time-only" not in sys.argv)


def first_run(app: QApplication, shots: bool = True) -> None:
    """What a new user sees: the app on a fresh database and fresh settings opens on the quick
    demo; Run is pressed as is; the Live page while its first server starts and mid-run; the
    Compare page it lands on when the sweep ends (timed from pressing Run); History."""
    import os

    os.environ["DRAFTBENCH_CONFIG_DIR"] = tempfile.mkdtemp()  # no earlier plan or database remembered
    from app.widgets import theme
    from app.main import MainWindow

    theme.apply()
    out = ROOT / "docs"
    out.mkdir(exist_ok=True)
    # A fixed, neutral folder, since the status bar shows the database's path.
    folder = Path(tempfile.gettempdir()) / "draftbench-demo"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    db = folder / "first-run.sqlite"
    w = MainWindow(db)
    w.resize(1280, 800)
    w.show()
    wait(app, lambda: w.isVisible() and w.experiment.run_button.isEnabled(), 120)
    settle(app)
    if shots:
        w.grab().save(str(out / "screenshot-experiment.png"))
    pressed = time.time()
    w.experiment.run_button.click()
    live = w.live
    if not shots:
        # Only the time from Run to a filled Compare page, with the app left alone meanwhile
        # (its CPU during each window is stored with the run: app_cpu_s).
        wait(app, lambda: w.sweep is None and w.compare.answer_model.rowCount() > 0, 1800)
        print(f"quick demo: Run pressed to a filled Compare page in {time.time() - pressed:.0f} s "
              f"(results in {db})", flush=True)
        w.close()
        return
    wait(app, lambda: "starting server" in live.title.text(), 120)
    settle(app)
    w.grab().save(str(out / "screenshot-live-first-run.png"))
    # The n-gram windows are the quick demo's speculative ones (about 10 s on 2 cores): shots taken
    # during one show its per-position acceptance, drawn once a second during the window.
    wait(app, lambda: live.feed is not None and "ngram" in live.title.text() and len(live.positions) >= 1
         and live.samples.n >= 3 and live.requests.n >= 2, 900)
    settle(app, 1.2)
    w.grab().save(str(out / "screenshot-live.png"))
    live_at = {}
    for width, height in SIZES:
        w.resize(width, height)
        settle(app, 1.1)
        live_at[width] = w.grab()
    w.resize(1280, 800)
    wait(app, lambda: w.sweep is None and w.compare.answer_model.rowCount() > 0, 1800)
    print(f"quick demo: Run pressed to a filled Compare page in {time.time() - pressed:.0f} s", flush=True)
    compare_at_both_sizes(app, w, "screenshot-compare")
    report_shot(w.compare.rows, db, "Draftbench quick demo (SmolLM2-135M on 2 CPU cores)")
    w.resize(1280, 800)
    w.tabs.setCurrentWidget(w.history)
    w.refresh_history()
    settle(app)
    w.grab().save(str(out / "screenshot-history.png"))
    # Every page at both sizes, after the quick demo (Live as it was mid-run).
    for width, pixmap in live_at.items():
        pixmap.save(str(out / f"screenshot-page-live-{width}.png"))
    for page, name in ((w.experiment, "experiment"), (w.history, "history"), (w.compare, "compare"),
                       (w.models, "models"), (w.train, "train")):
        w.tabs.setCurrentWidget(page)
        for width, height in SIZES:
            w.resize(width, height)
            settle(app, 0.8)
            w.grab().save(str(out / f"screenshot-page-{name}-{width}.png"))
    w.close()
    print("wrote", *sorted(p.name for p in out.glob("screenshot-*.png")))


if __name__ == "__main__":
    main()
